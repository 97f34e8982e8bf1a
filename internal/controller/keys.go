package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Finalizer lets the controller release the rollout's nodes when the
// DriverRollout is deleted. The labels and annotations the controller keeps
// on a node are api/v1alpha1's (node_labels.go): a restarted controller,
// the gate and the admission policy read the same constants.
const Finalizer = "gpufleet.io/release-nodes"

// DefaultDriverPodSelector picks the GPU Operator's driver pods (the
// NVIDIADriver and ClusterPolicy driver DaemonSets both carry it).
const DefaultDriverPodSelector = v1alpha1.LabelComponent + "=" + v1alpha1.ComponentNVIDIADriver

// defaultQuarantineTaint keeps every pod off a quarantined node.
func defaultQuarantineTaint() corev1.Taint {
	return corev1.Taint{Key: v1alpha1.TaintQuarantined, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}
