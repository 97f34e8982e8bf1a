package gate

import (
	"github.com/gpufleet/gpufleet/internal/gitops"
	"github.com/gpufleet/gpufleet/internal/render"
)

// gitopsExpectation is what the gate expects of a GitOps engine's own
// objects, the ones that apply the cluster's steps: which must be ready,
// and their kind.
type gitopsExpectation interface {
	// expect names in e the engine's objects that must be ready.
	expect(e *Expected)
	// reads are the kinds of those objects, where e names some.
	reads(e Expected) []ReadKind
}

// gitopsExpectations are the engines' expectations.
var gitopsExpectations = gitops.Implementations[gitopsExpectation](fluxExpectation{}, argoCDExpectation{})

// fluxExpectation: the Kustomization of each step (render's), Ready at
// the revision; the serving stack's are added where the fleet has one.
type fluxExpectation struct{}

func (fluxExpectation) expect(e *Expected) {
	e.Kustomizations = []string{"operators", "config", "lifecycle"}
}

func (fluxExpectation) reads(e Expected) []ReadKind {
	if len(e.Kustomizations) > 0 {
		return []ReadKind{KindKustomization}
	}
	return nil
}

// argoCDExpectation: render's Applications (render.ArgoCDApps), Synced at
// the revision and Healthy.
type argoCDExpectation struct{}

func (argoCDExpectation) expect(e *Expected) { e.Applications = render.ArgoCDApps() }

func (argoCDExpectation) reads(e Expected) []ReadKind {
	if len(e.Applications) > 0 {
		return []ReadKind{KindApplication}
	}
	return nil
}
