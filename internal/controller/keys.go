package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/internal/planner"
)

// Labels and annotations the controller keeps on a node. They are the
// rollout's memory: a restarted controller reads them back.
const (
	// LabelRollout names the DriverRollout that touched the node last.
	LabelRollout = "gpufleet.io/rollout"
	// LabelPhase is the node's phase in that rollout (v1alpha1.NodePhase).
	LabelPhase = "gpufleet.io/rollout-phase"
	// AnnotationSince is when the node entered its phase (RFC 3339, the
	// controller's clock).
	AnnotationSince = "gpufleet.io/rollout-since"
	// AnnotationFailed marks a node that failed in the rollout; it counts
	// against the failure budget.
	AnnotationFailed = "gpufleet.io/rollout-failed"
	// AnnotationAdminCordoned records that the node was already cordoned
	// when the rollout started it, so the rollout never uncordons it.
	AnnotationAdminCordoned = "gpufleet.io/admin-cordoned"

	// LabelDriver is the driver version a node should run; flipping it
	// moves the node between the operator's driver DaemonSets. It equals
	// render.LabelDriver (a test checks); taken from the planner so the
	// controller binary does not link the renderer and its Flux and Helm types.
	LabelDriver = planner.LabelDriver
	// LabelDriverVersion is GPU Feature Discovery's report of the driver
	// the node runs.
	LabelDriverVersion = "nvidia.com/cuda.driver-version.full"

	// LabelQuarantined is the default quarantine label.
	LabelQuarantined = "gpufleet.io/quarantined"
	// TaintQuarantined is the default quarantine taint key.
	TaintQuarantined = "gpufleet.io/quarantined"

	// Finalizer lets the controller release the rollout's nodes when the
	// DriverRollout is deleted.
	Finalizer = "gpufleet.io/release-nodes"
)

// DefaultDriverPodSelector picks the GPU Operator's driver pods (the
// NVIDIADriver and ClusterPolicy driver DaemonSets both carry it).
const DefaultDriverPodSelector = "app.kubernetes.io/component=nvidia-driver"

// defaultQuarantineTaint keeps every pod off a quarantined node.
func defaultQuarantineTaint() corev1.Taint {
	return corev1.Taint{Key: TaintQuarantined, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}
