package render

import "github.com/gpufleet/gpufleet/internal/gitops"

// engineRenderer is what render writes differently per GitOps engine:
// how a step's objects are readied for it, and the engine's own objects
// that apply the steps. The steps themselves (operators, config,
// lifecycle) are the same on every engine.
type engineRenderer interface {
	// prepareStep readies the objects of step for the engine.
	prepareStep(p clusterPlan, step string, objs []object) error
	// addApplyObjects adds to files the cluster's objects that have the
	// engine apply its steps (and the serving stack's, where it has one).
	addApplyObjects(p clusterPlan, files map[string][]byte) error
	// stackFiles are the files of the cluster's folder, by name, that
	// belong to the serving stack rather than to the GPU stack (see
	// ClusterStacks).
	stackFiles(p clusterPlan) []string
	// keepOnPrune are the annotations that keep an object the engine
	// applied when the folder stops holding it.
	keepOnPrune() map[string]string
}

// engineRenderers are the engines' renderers (flux.go, argocd.go).
var engineRenderers = gitops.Implementations[engineRenderer](fluxRenderer{}, argoCDRenderer{})

// engine is the renderer of p's cluster's engine, as the fleet file says.
func (p clusterPlan) engine() engineRenderer {
	return engineRenderers.For(p.fleet.EngineFor(p.cluster.Name))
}

// keepOnPrune are the annotations that keep an object the engine applied
// when the folder stops holding it (see namespaceObjects and
// gpufleetControllerObjects for which, and why).
func keepOnPrune(p clusterPlan) map[string]string { return p.engine().keepOnPrune() }
