package explain

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gitops"
)

// gitopsLinks is what explain reads and says differently per GitOps
// engine: the links the chain starts with (the engine's own objects), and
// how a later link names the engine's object that applies it.
type gitopsLinks interface {
	// observe reads into o what the engine's links need beyond the
	// gate's reads.
	observe(o *Observed, e gate.Expected, get getFunc) error
	// links adds the engine's links to the chain, in chain order.
	links(w *walker)
	// notApplied says, with why, that the engine's object that applies
	// step has not applied it (its link, earlier in the chain, is not ok).
	notApplied(w *walker, step string) (string, bool)
	// applyCommand is the command that has the engine apply step now.
	applyCommand(step string) string
}

// getFunc reads one object; nil where it does not exist.
type getFunc func(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error)

// engineLinks are the engines' links (flux.go, argocd.go).
var engineLinks = gitops.Implementations[gitopsLinks](fluxLinks{}, argoCDLinks{})

// gitopsLinksFor are the links of e's cluster's engine, which the fleet
// file names (gate.Expected.Engine): never guessed from what the cluster
// holds, which is what explain is to judge.
func gitopsLinksFor(e gate.Expected) gitopsLinks { return engineLinks.For(e.Engine) }
