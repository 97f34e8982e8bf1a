package explain

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gitops"
)

// TestChainStartsAtTheFleetFilesEngine: on a cluster that holds nothing
// yet, the chain starts at the engine's own object, the engine being the
// one the fleet file gives the cluster (stg on Argo CD, prod on Flux), and
// the command that applies a step is that engine's. Every engine has its
// case: a new engine must say where its chain starts.
func TestChainStartsAtTheFleetFilesEngine(t *testing.T) {
	f, err := fleet.Load("../render/testdata/argocd/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ cluster, firstKind, apply string }
	cases := map[gitops.Engine]want{
		gitops.Flux:   {"prod", "GitRepository", "flux reconcile kustomization"},
		gitops.ArgoCD: {"stg", "Application", "argocd.argoproj.io/refresh"},
	}
	for _, engine := range gitops.Engines() {
		w, ok := cases[engine]
		if !ok {
			t.Errorf("no case for engine %v", engine)
			continue
		}
		e := gate.Expect(f, w.cluster, rev)
		if e.Engine != engine {
			t.Fatalf("%s: gate.Expect says engine %v, the fleet file %v", w.cluster, e.Engine, engine)
		}
		empty := Observed{Observed: gate.Observed{Kustomizations: map[string]*unstructured.Unstructured{}, Applications: map[string]*unstructured.Unstructured{}}, Sources: map[string]*unstructured.Unstructured{}}
		a := Walk(f, e, empty)
		if len(a.Chain) == 0 || a.Chain[0].Object.Kind != w.firstKind {
			t.Errorf("%s on %v: chain starts %+v, want a %s", w.cluster, engine, a.Chain[:min(1, len(a.Chain))], w.firstKind)
		}
		if got := gitopsLinksFor(e).applyCommand("config"); !strings.Contains(got, w.apply) {
			t.Errorf("%s on %v: applyCommand = %q, want %q in it", w.cluster, engine, got, w.apply)
		}
	}
}
