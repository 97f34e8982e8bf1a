package render

import (
	"path"
	"slices"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Intervals of the stack's Flux Kustomizations. Drift in an app hurts users
// at once, so apps are reconciled often (mean repair time interval/2 plus
// apply time: about 2.5 min); infrastructure changes rarely.
const (
	appInterval   = 5 * time.Minute
	infraInterval = time.Hour
	infraTimeout  = 5 * time.Minute
	// SOPSKeySecret holds the age private key kustomize-controller
	// decrypts with (created once per cluster, outside Git).
	SOPSKeySecret = "sops-age"
)

// stackKustomizations are a cluster's Flux Kustomizations for the serving
// stack: infrastructure first, then one per service with dependsOn in the
// declared order (data → engines → gateway → front).
func stackKustomizations(p clusterPlan) []object {
	s := p.fleet.Stack
	if s == nil {
		return nil
	}
	env := p.cluster.Environment
	var objs []object
	add := func(name, dir string, interval, timeout time.Duration, decrypt bool, deps ...string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fluxNamespace, Labels: baseLabels(p)},
			Spec: kustomizev1.KustomizationSpec{
				Interval:  metav1.Duration{Duration: interval},
				Path:      "./" + dir,
				Prune:     true,
				Wait:      true,
				Timeout:   &metav1.Duration{Duration: timeout},
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: fluxSource},
			},
		}
		for _, d := range deps {
			k.Spec.DependsOn = append(k.Spec.DependsOn, meta.DependencyReference{Name: d})
		}
		if decrypt {
			k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: SOPSKeySecret}}
		}
		objs = append(objs, object{file: "flux-" + name + ".yaml", obj: k})
		return k
	}
	add("infra-controllers", infraControllers, infraInterval, infraTimeout, false)
	add("infra-configs", infraConfigs, infraInterval, infraTimeout, true, "infra-controllers")
	// Nothing depends on the webhook: its missing token must not block the stack.
	add(WebhookKustomization, infraWebhook, infraInterval, infraTimeout, true)
	if first := firstClusterOf(p, env); first == p.cluster.Name && hasImages(p) {
		// One cluster per environment runs its image automation, or every
		// cluster would push the same bump.
		add("image-automation", path.Join(infraImages, env), infraInterval, infraTimeout, false, "infra-controllers")
	}
	// Only the services placed on this cluster (fleet.Fits): one whose pods
	// could never schedule here would never be Ready, nor the gate pass.
	placed := p.fleet.ServicesOn(p.cluster.Name)
	for _, name := range placed {
		svc := s.Services[name]
		deps := []string{"infra-configs"}
		if svc.Environments[env].UsesGPU() {
			// GPU work waits for the cluster's drivers to be declared.
			deps = append(deps, stepConfig)
		}
		for _, d := range svc.DependsOn {
			// A dependency placed elsewhere has no Kustomization here to
			// wait for: waiting on it would block the service for ever.
			if slices.Contains(placed, d) {
				deps = append(deps, AppKustomization(d))
			}
		}
		k := add(AppKustomization(name), AppsOverlay(env, name), appInterval, fluxTimeout(svc.StartupDuration), len(svc.Secrets) > 0, deps...)
		// `gpufleet lint` compares the timeout with what the service declares.
		k.Annotations = map[string]string{v1alpha1.AnnotationStartup: svc.StartupDuration.String()}
	}
	return objs
}

// AppKustomization names the Flux Kustomization of a service.
func AppKustomization(service string) string { return "app-" + service }

func firstClusterOf(p clusterPlan, env string) string {
	if p.firstOfEnv != nil {
		// Found once per render: looking through the fleet for every
		// cluster grew with the square of the fleet.
		return p.firstOfEnv[env]
	}
	for _, c := range p.fleet.ClusterNames() {
		if p.fleet.Clusters[c].Environment == env {
			return c
		}
	}
	return ""
}

func hasImages(p clusterPlan) bool {
	for _, svc := range p.fleet.Stack.Services {
		if svc.Image != "" {
			return true
		}
	}
	return false
}
