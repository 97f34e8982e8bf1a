package render

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/lint"
)

// Folders of the serving stack, the layout Flux users know.
const (
	appsBase         = "apps/base"
	infraControllers = "infrastructure/controllers"
	infraConfigs     = "infrastructure/configs"
	infraImages      = "infrastructure/image-automation"
)

// AppsOverlay is the folder of a service's overlay in an environment.
func AppsOverlay(env, service string) string { return path.Join("apps", env, service) }

// SecretFile is where `gpufleet secret encrypt` writes an encrypted Secret
// a service declares; the overlay lists it so Flux applies it decrypted.
func SecretFile(env, service, secret string) string {
	return path.Join(AppsOverlay(env, service), "secret-"+secret+".sops.yaml")
}

// WebhookSecretFile holds the token of the push Receiver, encrypted to every
// environment's recipients. It lives in the webhook's own folder (see
// webhookObjects), so that until it is written only the webhook is down.
const WebhookSecretFile = lint.WebhookTokenFile

// WebhookSecretName is the Secret the push Receiver reads its token from.
const WebhookSecretName = "gpufleet-webhook-token"

// renderStack writes the fleet-wide part of the serving stack: the base of
// each service (written once), an overlay per service and environment with
// only what differs, and the infrastructure folders.
func renderStack(f *fleet.Fleet, files map[string][]byte) error {
	s := f.Stack
	if s == nil {
		return nil
	}
	for _, name := range s.ServiceNames() {
		svc := s.Services[name]
		if err := addFolder(files, path.Join(appsBase, name), baseObjects(svc)); err != nil {
			return err
		}
		for _, env := range f.Environments() {
			b, err := overlayKustomization(svc, env)
			if err != nil {
				return fmt.Errorf("overlay %s/%s: %w", env, name, err)
			}
			if err := put(files, path.Join(AppsOverlay(env, name), "kustomization.yaml"), b); err != nil {
				return err
			}
		}
	}
	if err := addFolder(files, infraControllers, controllerObjects(s)); err != nil {
		return err
	}
	if err := addFolder(files, infraConfigs, configsObjects(f)); err != nil {
		return err
	}
	if err := addFolderWithExtra(files, infraWebhook, webhookObjects(), []string{path.Base(WebhookSecretFile)}); err != nil {
		return err
	}
	for _, env := range f.Environments() {
		if err := addFolder(files, path.Join(infraImages, env), imageAutomationObjects(s, env)); err != nil {
			return err
		}
	}
	return put(files, sopsConfigFile, sopsConfig(f))
}

func serviceLabels(svc *fleet.Service) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":    svc.Name,
		"app.kubernetes.io/part-of": "llm-serving",
		v1alpha1.LabelManagedBy:     v1alpha1.ManagedByGPUFleet,
		"gpufleet.io/layer":         svc.Layer,
	}
}

// baseObjects is what every environment shares: a HelmRelease for a charted
// service; a Deployment and a Service for an image.
func baseObjects(svc *fleet.Service) []object {
	meta := metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: serviceLabels(svc)}
	if c := svc.Chart; c != nil {
		return []object{{file: "helmrelease.yaml", obj: &helmv2.HelmRelease{
			TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
			ObjectMeta: meta,
			Spec: helmv2.HelmReleaseSpec{
				Interval: metav1.Duration{Duration: 30 * time.Minute},
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: c.Name, Version: c.Version,
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: chartSourceName(svc), Namespace: fluxNamespace},
				}},
				// Helm waits for the release's objects; give it the declared
				// start-up time and some.
				Timeout: &metav1.Duration{Duration: fluxTimeout(svc.StartupDuration)},
				Install: &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: 3}},
				Upgrade: &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 3}},
			},
		}}}
	}
	selector := map[string]string{"app.kubernetes.io/name": svc.Name}
	container := corev1.Container{
		Name:  svc.Name,
		Image: svc.Image + ":" + svc.Tag,
		Args:  slices.Clone(svc.Args),
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(svc.Port)}},
	}
	if svc.Health != "" {
		probe := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: svc.Health, Port: intstr.FromString("http")}}
		container.ReadinessProbe = &corev1.Probe{ProbeHandler: probe, PeriodSeconds: 10}
		// The startup probe allows the declared start-up time (loading a
		// large model) before the liveness of the service is judged.
		container.StartupProbe = &corev1.Probe{ProbeHandler: probe, PeriodSeconds: 10, FailureThreshold: int32(svc.StartupDuration/(10*time.Second)) + 1}
	}
	return []object{
		{file: "deployment.yaml", obj: &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: serviceLabels(svc)},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
				},
			},
		}},
		{file: "service.yaml", obj: &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta,
			Spec: corev1.ServiceSpec{
				Selector: selector,
				Ports:    []corev1.ServicePort{{Name: "http", Port: int32(svc.Port), TargetPort: intstr.FromString("http")}},
			},
		}},
	}
}

// overlayKustomization is the one file of a service in an environment: the
// base, the image tag image automation moves (marked for it), and patches
// holding only what differs from the base.
func overlayKustomization(svc *fleet.Service, env string) ([]byte, error) {
	k := kusttypes.Kustomization{
		TypeMeta:  kusttypes.TypeMeta{APIVersion: kusttypes.KustomizationVersion, Kind: kusttypes.KustomizationKind},
		Resources: []string{"../../base/" + svc.Name},
	}
	for _, secret := range svc.Secrets {
		k.Resources = append(k.Resources, path.Base(SecretFile(env, svc.Name, secret)))
	}
	if svc.Image != "" {
		k.Images = []kusttypes.Image{{Name: svc.Image, NewTag: svc.Tag}}
	}
	patch, err := overlayPatch(svc, svc.Environments[env])
	if err != nil {
		return nil, err
	}
	if patch != "" {
		// A strategic-merge patch names its target (kind, name) itself.
		k.Patches = []kusttypes.Patch{{Patch: patch}}
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if svc.Image != "" {
		// The marker tells image automation which line to rewrite; a
		// comment cannot be marshalled, so it is added to the tag line.
		line := "  newTag: " + yamlScalar(svc.Tag) + "\n"
		marked := strings.TrimSuffix(line, "\n") + " # " + ImagePolicyMarker(svc.Name, env) + "\n"
		if !strings.Contains(string(b), line) {
			return nil, fmt.Errorf("no newTag line to mark in the overlay of %s", svc.Name)
		}
		b = []byte(strings.Replace(string(b), line, marked, 1))
	}
	return append([]byte(Header), b...), nil
}

// ImagePolicyMarker is the setter comment image automation looks for.
func ImagePolicyMarker(service, env string) string {
	return fmt.Sprintf(`{"$imagepolicy": "%s:%s:tag"}`, fluxNamespace, ImagePolicyName(service, env))
}

// ImagePolicyName names a service's image policy in an environment.
func ImagePolicyName(service, env string) string { return service + "-" + env }

func yamlScalar(s string) string {
	b, _ := yaml.Marshal(s)
	return strings.TrimSpace(string(b))
}

// overlayPatch is a strategic-merge patch of what env changes, or "".
func overlayPatch(svc *fleet.Service, set *fleet.ServiceSetting) (string, error) {
	if set == nil {
		return "", nil
	}
	if svc.Chart != nil {
		if set.Replicas == nil {
			return "", nil
		}
		return marshalPatch(map[string]any{
			"apiVersion": helmv2.GroupVersion.String(), "kind": helmv2.HelmReleaseKind,
			"metadata": map[string]any{"name": svc.Name, "namespace": svc.Namespace},
			"spec":     map[string]any{"values": map[string]any{"replicaCount": *set.Replicas}},
		})
	}
	spec := map[string]any{}
	if set.Replicas != nil {
		spec["replicas"] = *set.Replicas
	}
	container := map[string]any{"name": svc.Name}
	if args := engineArgs(svc, set); len(args) > 0 {
		container["args"] = args
	}
	if limits := gpuLimits(set); limits != nil {
		container["resources"] = map[string]any{"limits": limits}
	}
	pod := map[string]any{}
	if len(container) > 1 {
		pod["containers"] = []any{container}
	}
	if set.GPUProduct != "" {
		pod["nodeSelector"] = map[string]any{v1alpha1.LabelGFDProduct: set.GPUProduct}
	}
	if set.UsesGPU() {
		// GPU nodes are usually tainted so that only GPU work lands there.
		pod["tolerations"] = []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}
	}
	if len(pod) > 0 {
		spec["template"] = map[string]any{"spec": pod}
	}
	if len(spec) == 0 {
		return "", nil
	}
	return marshalPatch(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": svc.Name, "namespace": svc.Namespace},
		"spec":     spec,
	})
}

// engineArgs are the base args plus what an environment sets for an
// inference engine: the model and vLLM's GPU settings.
func engineArgs(svc *fleet.Service, set *fleet.ServiceSetting) []any {
	var extra []string
	if set.Model != "" {
		extra = append(extra, "--model", set.Model)
	}
	if set.GPUMemoryUtilization > 0 {
		extra = append(extra, "--gpu-memory-utilization", fmt.Sprint(set.GPUMemoryUtilization))
	}
	if set.TensorParallelSize > 0 {
		extra = append(extra, "--tensor-parallel-size", fmt.Sprint(set.TensorParallelSize))
	}
	if len(extra) == 0 {
		return nil
	}
	var args []any
	for _, a := range append(slices.Clone(svc.Args), extra...) {
		args = append(args, a)
	}
	return args
}

// gpuLimits requests whole GPUs, or one MIG slice of the environment's profile.
func gpuLimits(set *fleet.ServiceSetting) map[string]any {
	switch {
	case set.MIG != "":
		return map[string]any{"nvidia.com/mig-" + set.MIG: "1"}
	case set.GPUs > 0:
		return map[string]any{"nvidia.com/gpu": fmt.Sprint(set.GPUs)}
	}
	return nil
}

func marshalPatch(m map[string]any) (string, error) {
	b, err := encodeObject(m)
	return string(b), err
}

// fluxTimeout is how long Flux waits for a service: its declared start-up
// time plus half again (at least two minutes) for pulling and scheduling.
func fluxTimeout(startup time.Duration) time.Duration {
	return (startup + max(2*time.Minute, startup/2)).Round(time.Minute)
}
