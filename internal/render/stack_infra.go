package render

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	imageautov1 "github.com/fluxcd/image-automation-controller/api/v1"
	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	notifv1 "github.com/fluxcd/notification-controller/api/v1"
	notifv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// controllerObjects are the stack's namespaces and chart sources, which
// every service needs before it can be applied.
func controllerObjects(s *fleet.Stack) []object {
	var objs []object
	namespaces := map[string]bool{}
	sources := map[string]*fleet.Service{}
	for _, svc := range s.Services {
		namespaces[svc.Namespace] = true
		if svc.Chart != nil {
			sources[chartSourceName(svc)] = svc
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		objs = append(objs, object{file: "namespace-" + ns + ".yaml", obj: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByGPUFleet}},
		}})
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		repo := &sourcev1.HelmRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fluxNamespace},
			Spec:       sourcev1.HelmRepositorySpec{URL: sources[name].Chart.Repository, Interval: metav1.Duration{Duration: time.Hour}},
		}
		if strings.HasPrefix(repo.Spec.URL, "oci://") {
			repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
		}
		objs = append(objs, object{file: "helmrepository-" + name + ".yaml", obj: repo})
	}
	return objs
}

// chartSourceName names the HelmRepository of a charted service.
func chartSourceName(svc *fleet.Service) string { return svc.Name + "-charts" }

// infraWebhook is the folder of the push Receiver and its token, applied by
// the infra-webhook Kustomization, on which nothing depends.
const infraWebhook = "infrastructure/webhook"

// WebhookKustomization names the Flux Kustomization of the push webhook.
const WebhookKustomization = "infra-webhook"

// webhookObjects are the push Receiver: a push to the fleet repository
// reconciles at once instead of waiting for the interval.
//
// Note: the Receiver and its token have a folder and a Kustomization of
// their own. Until `gpufleet secret encrypt --webhook-token` has been run
// the token file is missing, and kustomize fails the whole build of a
// folder that lists a missing file; a Receiver whose Secret is missing is
// never Ready, which fails a Kustomization that waits. Either would have
// blocked infra-configs and, through dependsOn, every app. Alone, only the
// webhook is down (pushes wait for the interval), and `gpufleet lint` and
// `gpufleet status` say what to run.
func webhookObjects() []object {
	return []object{{file: "receiver.yaml", obj: &notifv1.Receiver{
		TypeMeta:   metav1.TypeMeta{APIVersion: notifv1.GroupVersion.String(), Kind: notifv1.ReceiverKind},
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-push", Namespace: fluxNamespace},
		Spec: notifv1.ReceiverSpec{
			Type:      notifv1.GenericReceiver,
			Resources: []notifv1.ReceiverResource{{CrossNamespaceObjectReference: notifv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: fluxSource}}},
			SecretRef: &meta.LocalObjectReference{Name: WebhookSecretName},
		},
	}}}
}

// configsObjects are, when an alert URL is set, an Alert on failed
// reconciliations. The folder stays when empty: the apps depend on it.
func configsObjects(f *fleet.Fleet) []object {
	s := f.Stack
	var objs []object
	if s.AlertURL != "" {
		objs = append(objs,
			object{file: "provider.yaml", obj: &notifv1beta3.Provider{
				TypeMeta:   metav1.TypeMeta{APIVersion: notifv1beta3.GroupVersion.String(), Kind: notifv1beta3.ProviderKind},
				ObjectMeta: metav1.ObjectMeta{Name: "fleet-alerts", Namespace: fluxNamespace},
				Spec:       notifv1beta3.ProviderSpec{Type: notifv1beta3.GenericProvider, Address: s.AlertURL},
			}},
			object{file: "alert.yaml", obj: &notifv1beta3.Alert{
				TypeMeta:   metav1.TypeMeta{APIVersion: notifv1beta3.GroupVersion.String(), Kind: notifv1beta3.AlertKind},
				ObjectMeta: metav1.ObjectMeta{Name: "reconciliation-failures", Namespace: fluxNamespace},
				Spec: notifv1beta3.AlertSpec{
					ProviderRef:   meta.LocalObjectReference{Name: "fleet-alerts"},
					EventSeverity: "error",
					EventSources:  alertSources(f),
					Summary:       "gpufleet: a reconciliation failed",
				},
			}},
		)
	}
	return objs
}

// alertSources are the objects whose failures the Alert reports: every
// Kustomization (all live in flux-system, the Alert's namespace) and every
// HelmRelease, which live in the namespace they install into.
// notification-controller matches a source's namespace exactly (a "*"
// namespace matches nothing), so there is one HelmRelease source per such
// namespace: the operators' (the defaults, and those of every adopted
// install of the fleet: the folder is the same on every cluster) and the
// charted services'.
func alertSources(f *fleet.Fleet) []notifv1.CrossNamespaceObjectReference {
	s := f.Stack
	srcs := []notifv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "*"}}
	namespaces := map[string]bool{GPUOperatorNamespace: true, NetworkOperatorNamespace: true}
	for _, c := range f.Clusters {
		namespaces[c.GPUOperatorNamespace()] = true
		namespaces[c.NetworkOperatorNamespace()] = true
	}
	for _, svc := range s.Services {
		if svc.Chart != nil {
			namespaces[svc.Namespace] = true
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		srcs = append(srcs, notifv1.CrossNamespaceObjectReference{Kind: "HelmRelease", Name: "*", Namespace: ns})
	}
	return srcs
}

// imageAutomationObjects scan each image service's registry, pick the
// highest tag inside the environment's semver range, and push the new tag
// to the environment's review branch (never to main).
func imageAutomationObjects(s *fleet.Stack, env string) []object {
	var objs []object
	for _, name := range s.ServiceNames() {
		svc := s.Services[name]
		if svc.Image == "" {
			continue
		}
		tagRange := svc.TagRange
		if set := svc.Environments[env]; set != nil && set.TagRange != "" {
			tagRange = set.TagRange
		}
		objs = append(objs,
			object{file: "imagerepository-" + name + ".yaml", obj: &imagev1.ImageRepository{
				TypeMeta:   metav1.TypeMeta{APIVersion: imagev1.GroupVersion.String(), Kind: imagev1.ImageRepositoryKind},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fluxNamespace},
				Spec:       imagev1.ImageRepositorySpec{Image: svc.Image, Interval: metav1.Duration{Duration: 10 * time.Minute}},
			}},
			object{file: "imagepolicy-" + name + ".yaml", obj: &imagev1.ImagePolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: imagev1.GroupVersion.String(), Kind: imagev1.ImagePolicyKind},
				ObjectMeta: metav1.ObjectMeta{Name: ImagePolicyName(name, env), Namespace: fluxNamespace, Labels: map[string]string{"gpufleet.io/environment": env}},
				Spec: imagev1.ImagePolicySpec{
					ImageRepositoryRef: meta.NamespacedObjectReference{Name: name},
					Policy:             imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: tagRange}},
				},
			}},
		)
	}
	if len(objs) == 0 {
		return nil
	}
	return append(objs, object{file: "imageupdateautomation.yaml", obj: &imageautov1.ImageUpdateAutomation{
		TypeMeta:   metav1.TypeMeta{APIVersion: imageautov1.GroupVersion.String(), Kind: imageautov1.ImageUpdateAutomationKind},
		ObjectMeta: metav1.ObjectMeta{Name: env, Namespace: fluxNamespace},
		Spec: imageautov1.ImageUpdateAutomationSpec{
			SourceRef: imageautov1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: fluxSource},
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			// Only this environment's policies, so its branch changes only
			// its own overlay's marked lines.
			PolicySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpufleet.io/environment": env}},
			GitSpec: &imageautov1.GitSpec{
				Checkout: &imageautov1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: "main"}},
				Commit: imageautov1.CommitSpec{
					Author:          imageautov1.CommitUser{Name: "gpufleet image automation", Email: "image-automation@gpufleet.io"},
					MessageTemplate: fmt.Sprintf("%s: update images\n\n{{ range .Changed.Changes }}{{ print .OldValue }} -> {{ println .NewValue }}{{ end }}", env),
				},
				Push: &imageautov1.PushSpec{Branch: ReviewBranch(s, env)},
			},
			Update: &imageautov1.UpdateStrategy{Strategy: imageautov1.UpdateStrategySetters, Path: "./" + path.Join("apps", env)},
		},
	}})
}

// ReviewBranch is where image automation pushes an environment's bumps.
func ReviewBranch(s *fleet.Stack, env string) string { return s.ReviewBranch + "/" + env }

// sopsConfig is .sops.yaml: each environment's secrets are encrypted to its
// own age recipients; the shared webhook token to all of them. Only Secret
// data is encrypted, so a reviewer still sees which keys changed.
func sopsConfig(f *fleet.Fleet) []byte {
	type rule struct {
		PathRegex      string `json:"path_regex"`
		EncryptedRegex string `json:"encrypted_regex"`
		Age            string `json:"age"`
	}
	var rules []rule
	var all []string
	for _, env := range f.Environments() {
		r, ok := f.Stack.AgeRecipients[env]
		if !ok {
			continue
		}
		all = append(all, r)
		rules = append(rules, rule{PathRegex: `^apps/` + env + `/.*\.sops\.yaml$`, EncryptedRegex: "^(data|stringData)$", Age: r})
	}
	if len(all) > 0 {
		rules = append(rules, rule{PathRegex: `^infrastructure/.*\.sops\.yaml$`, EncryptedRegex: "^(data|stringData)$", Age: strings.Join(all, ",")})
	}
	b, _ := yaml.Marshal(map[string]any{"creation_rules": rules})
	return append([]byte(Header), b...)
}
