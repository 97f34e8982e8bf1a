package render

import (
	"fmt"
	"maps"
	"path"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	imageautov1 "github.com/fluxcd/image-automation-controller/api/v1"
	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	notifv1 "github.com/fluxcd/notification-controller/api/v1"
	notifv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestReadBackIntoTypes decodes every rendered file strictly into the Go
// type of its kind: a field the type does not know fails the test.
func TestReadBackIntoTypes(t *testing.T) {
	out := renderFile(t, exampleFleet)
	kinds := map[string]int{}
	for _, p := range out.Paths() {
		b := out.Files[p]
		if p == ".sops.yaml" {
			continue
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(b, &tm); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var into any
		switch tm.APIVersion + "/" + tm.Kind {
		case "kustomize.config.k8s.io/v1beta1/Kustomization":
			into = &kusttypes.Kustomization{}
		case kustomizev1.GroupVersion.String() + "/Kustomization":
			into = &kustomizev1.Kustomization{}
		case helmv2.GroupVersion.String() + "/HelmRelease":
			into = &helmv2.HelmRelease{}
		case sourcev1.GroupVersion.String() + "/HelmRepository":
			into = &sourcev1.HelmRepository{}
		case "v1/Namespace":
			into = &corev1.Namespace{}
		case "v1/Service":
			into = &corev1.Service{}
		case "apps/v1/Deployment":
			into = &appsv1.Deployment{}
		case imagev1.GroupVersion.String() + "/ImageRepository":
			into = &imagev1.ImageRepository{}
		case imagev1.GroupVersion.String() + "/ImagePolicy":
			into = &imagev1.ImagePolicy{}
		case imageautov1.GroupVersion.String() + "/ImageUpdateAutomation":
			into = &imageautov1.ImageUpdateAutomation{}
		case notifv1.GroupVersion.String() + "/Receiver":
			into = &notifv1.Receiver{}
		case notifv1beta3.GroupVersion.String() + "/Provider":
			into = &notifv1beta3.Provider{}
		case notifv1beta3.GroupVersion.String() + "/Alert":
			into = &notifv1beta3.Alert{}
		case v1alpha1.GroupVersion.String() + "/DriverRollout":
			into = &v1alpha1.DriverRollout{}
		case "nvidia.com/v1alpha1/NVIDIADriver", "mellanox.com/v1alpha1/NicClusterPolicy":
			// No Go type: `gpufleet validate` checks these against the
			// CRD schema of each operator version.
			kinds[tm.Kind]++
			continue
		default:
			t.Errorf("%s: unexpected kind %s %s", p, tm.APIVersion, tm.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			t.Errorf("%s: does not read back into %T: %v", p, into, err)
		}
		kinds[tm.Kind]++
	}
	// 4 clusters: 3 GPU Flux Kustomizations each, 2 operators each, one
	// NVIDIADriver per pool (no rollout under way in the example). The
	// stack: 8 services (3 charted, 5 images), 2 environments, 5 namespaces;
	// per cluster 2 infrastructure + 8 app Kustomizations, and image
	// automation in the first cluster of each environment.
	const clusters, services, charted, images, envs = 4, 8, 3, 5, 2
	want := map[string]int{
		// Services are placed by what they need: vllm (whole H100s) is not
		// on prod-a100, nor the two MIG embedders on the two H100 clusters.
		"Kustomization":         clusters*(3+3+services) - 5 + 2 + clusters*4 + services + services*envs + 5,
		"HelmRelease":           clusters*2 + charted,
		"HelmRepository":        clusters + charted,
		"Namespace":             clusters*2 + 5,
		"DriverRollout":         clusters,
		"NVIDIADriver":          6,
		"NicClusterPolicy":      3, // the clusters with InfiniBand pools
		"Deployment":            images,
		"Service":               images,
		"ImageRepository":       images * envs,
		"ImagePolicy":           images * envs,
		"ImageUpdateAutomation": envs,
		"Receiver":              1,
		"Provider":              1,
		"Alert":                 1,
	}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s: got %d objects, want %d", k, kinds[k], n)
		}
	}
}

// TestKustomizeBuild builds every rendered folder with kustomize's Go API,
// as kustomize-controller does, and checks that each yields the objects its
// kustomization.yaml lists.
func TestKustomizeBuild(t *testing.T) {
	out := renderFile(t, exampleFleet)
	fs := filesys.MakeFsInMemory()
	dirs := map[string]bool{}
	// Encrypted Secrets are written by `gpufleet secret encrypt`, not by
	// render; stand-ins let the folders that list them build.
	withSecrets := maps.Clone(out.Files)
	withSecrets[WebhookSecretFile] = []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + WebhookSecretName + "\n  namespace: flux-system\n")
	for _, env := range []string{"staging", "prod"} {
		withSecrets[SecretFile(env, "litellm", "litellm-master-key")] = []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: litellm-master-key\n  namespace: llm-gateway\n")
	}
	for p, b := range withSecrets {
		if err := fs.WriteFile("/"+p, b); err != nil {
			t.Fatal(err)
		}
		if path.Base(p) == "kustomization.yaml" {
			dirs[path.Dir(p)] = true
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for dir := range dirs {
		rm, err := k.Run(fs, "/"+dir)
		if err != nil {
			t.Errorf("kustomize build %s: %v", dir, err)
			continue
		}
		var kust kusttypes.Kustomization
		if err := yaml.Unmarshal(out.Files[path.Join(dir, "kustomization.yaml")], &kust); err != nil {
			t.Fatal(err)
		}
		want := len(kust.Resources)
		for _, r := range kust.Resources {
			if strings.HasPrefix(r, "../") {
				// An overlay's base brings its own objects.
				want += countResources(t, out, path.Join(dir, r)) - 1
			}
		}
		if rm.Size() != want || rm.Size() == 0 {
			t.Errorf("kustomize build %s: %d objects, want %d", dir, rm.Size(), want)
		}
	}
	// The overlay's patch and image tag are applied.
	rm, err := k.Run(fs, "/apps/prod/vllm")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := rm.AsYaml()
	for _, want := range []string{"replicas: 2", "image: vllm/vllm-openai:0.8.4", "nvidia.com/gpu: \"4\"", "- meta-llama/Llama-3.1-70B-Instruct", "nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("kustomize build apps/prod/vllm lacks %q:\n%s", want, y)
		}
	}
	// 4 clusters × (root, operators, config, lifecycle); 8 service bases,
	// 8 × 2 overlays; infrastructure controllers, configs, webhook, 2 image
	// automations.
	if want := 4*4 + 8 + 8*2 + 5; len(dirs) != want {
		t.Errorf("got %d kustomization folders, want %d", len(dirs), want)
	}
}

// TestDependsOnChain checks the three Flux Kustomizations of each cluster
// form the chain operators → config → lifecycle, each with prune, wait and
// a timeout, pointing at its own folder.
func TestDependsOnChain(t *testing.T) {
	out := renderFile(t, exampleFleet)
	for _, c := range []string{"stg-h100", "prod-a100"} {
		prev := ""
		for _, s := range []string{stepOperators, stepConfig, stepLifecycle} {
			var k kustomizev1.Kustomization
			if err := yaml.Unmarshal(out.Files[fmt.Sprintf("clusters/%s/flux-%s.yaml", c, s)], &k); err != nil {
				t.Fatal(err)
			}
			var deps []string
			for _, d := range k.Spec.DependsOn {
				deps = append(deps, d.Name)
			}
			if want := strings.Fields(prev); strings.Join(deps, " ") != strings.Join(want, " ") {
				t.Errorf("%s/%s dependsOn %v, want %v", c, s, deps, want)
			}
			// config does not wait: an NVIDIADriver that selects no node is
			// never healthy (see steps in flux.go).
			if !k.Spec.Prune || k.Spec.Wait != (s != stepConfig) || k.Spec.Timeout == nil || k.Spec.Path != "./clusters/"+c+"/"+s {
				t.Errorf("%s/%s: prune=%v wait=%v timeout=%v path=%q", c, s, k.Spec.Prune, k.Spec.Wait, k.Spec.Timeout, k.Spec.Path)
			}
			prev = s
		}
	}
}

func countResources(t *testing.T, out *Output, dir string) int {
	t.Helper()
	var kust kusttypes.Kustomization
	if err := yaml.Unmarshal(out.Files[path.Join(dir, "kustomization.yaml")], &kust); err != nil {
		t.Fatal(err)
	}
	return len(kust.Resources)
}
