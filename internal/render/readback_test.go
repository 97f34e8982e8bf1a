package render

import (
	"fmt"
	"path"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
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
		case v1alpha1.GroupVersion.String() + "/DriverRollout":
			into = &v1alpha1.DriverRollout{}
		case "nvidia.com/v1alpha1/NVIDIADriver":
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
	// 4 clusters: 3 Flux Kustomizations each, 2 operators each, one
	// NVIDIADriver per pool (no rollout under way in the example).
	want := map[string]int{"Kustomization": 4*3 + 4*4, "HelmRelease": 8, "HelmRepository": 4, "Namespace": 8, "DriverRollout": 4, "NVIDIADriver": 6}
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
	for p, b := range out.Files {
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
		if rm.Size() != len(kust.Resources) || rm.Size() == 0 {
			t.Errorf("kustomize build %s: %d objects, want %d", dir, rm.Size(), len(kust.Resources))
		}
	}
	if len(dirs) != 4*4 {
		t.Errorf("got %d kustomization folders, want 16 (4 clusters × root, operators, config, lifecycle)", len(dirs))
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
			if !k.Spec.Prune || !k.Spec.Wait || k.Spec.Timeout == nil || k.Spec.Path != "./clusters/"+c+"/"+s {
				t.Errorf("%s/%s: prune=%v wait=%v timeout=%v path=%q", c, s, k.Spec.Prune, k.Spec.Wait, k.Spec.Timeout, k.Spec.Path)
			}
			prev = s
		}
	}
}
