package render

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// argoFleet is testdata/argocd/fleet.toml: stg on Argo CD, prod on Flux.
func argoFleet(t testing.TB) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("testdata/argocd/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func renderArgo(t testing.TB) *Output {
	t.Helper()
	out, err := RenderWith(argoFleet(t), Options{Charts: &fakeCharts{calls: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArgoCDGolden compares the render of a fleet with a cluster on each
// engine with testdata/argocd/golden; -update regenerates it.
func TestArgoCDGolden(t *testing.T) {
	matchGolden(t, renderArgo(t), filepath.Join("testdata", "argocd", "golden"))
}

// TestArgoCDLayout: the Argo CD cluster's folder is the three steps (what
// Application gpu-stack builds with kustomize) and its argocd/ folder (what
// the root Application applies); no Flux object in either, and the Flux
// cluster beside it is rendered as before.
func TestArgoCDLayout(t *testing.T) {
	out := renderArgo(t)
	stack := kustomizeObjects(t, out, "clusters/stg")
	var kinds []string
	for _, o := range stack {
		kinds = append(kinds, o["kind"].(string)+"/"+name(o))
	}
	for _, want := range []string{"Deployment/gpu-operator", "NVIDIADriver/h100-570-172-08", "NVIDIADriver/h100-580-95-05", "DriverRollout/r2", "Deployment/gpufleet-controller"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("kustomize build clusters/stg has no %s: %v", want, kinds)
		}
	}
	for _, k := range kinds {
		if strings.HasPrefix(k, "Kustomization/") || strings.HasPrefix(k, "GitRepository/") || strings.HasPrefix(k, "Application/") {
			t.Errorf("the steps of an Argo CD cluster hold %s", k)
		}
	}
	root := kustomizeObjects(t, out, "clusters/stg/argocd")
	var got []string
	for _, o := range root {
		got = append(got, o["kind"].(string)+"/"+name(o))
	}
	slices.Sort(got)
	want := []string{"AppProject/gpufleet", "Application/gpu-stack", "Application/gpufleet", "ConfigMap/argocd-cm", "Secret/gpufleet-repository"}
	if !slices.Equal(got, want) {
		t.Errorf("argocd/ holds %v, want %v", got, want)
	}
	if _, ok := out.Files["clusters/prod/flux-lifecycle.yaml"]; !ok {
		t.Error("the Flux cluster has no flux-lifecycle.yaml")
	}
	if _, ok := out.Files["clusters/stg/flux-lifecycle.yaml"]; ok {
		t.Error("the Argo CD cluster has a flux-lifecycle.yaml")
	}
	if _, ok := out.Files["clusters/prod/argocd/kustomization.yaml"]; ok {
		t.Error("the Flux cluster has an argocd/ folder")
	}
	if got := ArgoCDBootstrap("stg"); out.Files[got] == nil {
		t.Errorf("ArgoCDBootstrap names %s, which render does not write", got)
	}
}

// TestArgoCDWaves: operators, then config, then lifecycle, by sync wave;
// of the operators step's objects only the Deployments the Flux step waits
// for (the operators' and gpufleet-controller's) count in the
// Application's health.
func TestArgoCDWaves(t *testing.T) {
	out := renderArgo(t)
	for step, want := range map[string]string{stepOperators: "", stepConfig: "1", stepLifecycle: "2"} {
		objs := kustomizeObjects(t, out, "clusters/stg/"+step)
		if len(objs) == 0 {
			t.Fatalf("the %s step holds nothing", step)
		}
		for _, o := range objs {
			ann, _ := o["metadata"].(map[string]any)["annotations"].(map[string]any)
			ref := o["kind"].(string) + "/" + name(o)
			if wave, _ := ann[annotationSyncWave].(string); wave != want {
				t.Errorf("%s: %s has sync wave %q, want %q", step, ref, wave, want)
			}
			if step != stepOperators || o["kind"] == "Namespace" && !strings.HasPrefix(name(o), "gpufleet") {
				continue
			}
			ignored := ann[annotationIgnoreHealth] == "true"
			if waited := o["kind"] == "Deployment"; ignored == waited {
				t.Errorf("%s: %s has ignore-healthcheck %t", step, ref, ignored)
			}
		}
	}
}

// TestArgoCDApplications: both Applications sync by themselves, prune,
// repair drift, retry with the latest commit, and have no finalizer that
// would delete the GPU stack with them; gpu-stack applies server-side and
// only what changed.
func TestArgoCDApplications(t *testing.T) {
	out := renderArgo(t)
	for _, o := range kustomizeObjects(t, out, "clusters/stg/argocd") {
		if o["kind"] != "Application" {
			continue
		}
		meta := o["metadata"].(map[string]any)
		if meta["finalizers"] != nil {
			t.Errorf("Application %s has finalizers %v", name(o), meta["finalizers"])
		}
		spec := o["spec"].(map[string]any)
		pol := spec["syncPolicy"].(map[string]any)
		auto := pol["automated"].(map[string]any)
		if auto["prune"] != true || auto["selfHeal"] != true {
			t.Errorf("Application %s: automated %v", name(o), auto)
		}
		retry := pol["retry"].(map[string]any)
		if retry["refresh"] != true || fmt.Sprint(retry["limit"]) != "-1" {
			t.Errorf("Application %s: retry %v", name(o), retry)
		}
		src := spec["source"].(map[string]any)
		if src["repoURL"] != "https://git.internal.example/platform/fleet.git" || src["targetRevision"] != "main" {
			t.Errorf("Application %s: source %v", name(o), src)
		}
		opts := pol["syncOptions"].([]any)
		if name(o) == ArgoCDStackApp {
			if src["path"] != "clusters/stg" || !slices.Contains(opts, any("ServerSideApply=true")) || !slices.Contains(opts, any("ApplyOutOfSyncOnly=true")) {
				t.Errorf("gpu-stack: path %v, sync options %v", src["path"], opts)
			}
		} else if src["path"] != "clusters/stg/argocd" {
			t.Errorf("gpufleet: path %v", src["path"])
		}
	}
}

// TestArgoCDHealthChecks: the Lua health checks are in argocd-cm for the
// kinds a wave waits on.
func TestArgoCDHealthChecks(t *testing.T) {
	for key, script := range argoHealthChecks() {
		if !strings.HasPrefix(key, "resource.customizations.health.") || !strings.Contains(script, "return hs") {
			t.Errorf("%s:\n%s", key, script)
		}
	}
	for _, k := range []string{"gpufleet.io_DriverRollout", "nvidia.com_NVIDIADriver", "nvidia.com_ClusterPolicy"} {
		if _, ok := argoHealthChecks()["resource.customizations.health."+k]; !ok {
			t.Errorf("no health check for %s", k)
		}
	}
}

// kustomizeObjects builds a folder of out as kustomize-controller and
// Argo CD's repo-server do, failing the test when kustomize refuses it, and
// returns its objects.
func kustomizeObjects(t *testing.T, out *Output, dir string) []map[string]any {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, b := range out.Files {
		if strings.HasPrefix(p, dir+"/") {
			if err := fs.WriteFile("/"+p, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []map[string]any
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, m)
	}
	return objs
}

func name(o map[string]any) string {
	n, _ := o["metadata"].(map[string]any)["name"].(string)
	return n
}
