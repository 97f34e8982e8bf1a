package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// operatorMarks writes what a transition of the gpu-operator actuator
// changes on the node besides gpufleet's own progress marks: the GPU
// Operator's skip label (Hold, Release) and its record that the node was
// cordoned when its upgrade began (KeepCordon), so that the operator ends
// the upgrade without uncordoning it. They go in the same patch as the
// progress, so a node is never released without the rollout saying so.
// Nothing else is done on this path: the operator cordons, drains,
// restarts the driver pod and uncordons.
func operatorMarks(n *corev1.Node, t planner.Transition) {
	switch {
	case t.Hold:
		n.Labels[v1alpha1.LabelOperatorUpgradeSkip] = "true"
	case t.Release:
		delete(n.Labels, v1alpha1.LabelOperatorUpgradeSkip)
	}
	if t.KeepCordon && n.Spec.Unschedulable {
		n.Annotations[v1alpha1.AnnotationOperatorInitialUnschedulable] = "true"
	}
}
