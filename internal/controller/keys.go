package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Labels and annotations the controller keeps on a node. They are the
// rollout's memory: a restarted controller reads them back. The contract is
// api/v1alpha1's (node_labels.go); these are its names here.
const (
	// LabelRollout names the DriverRollout the node belongs to.
	LabelRollout = v1alpha1.LabelRollout
	// LabelPhase is the node's phase in that rollout (v1alpha1.NodePhase).
	LabelPhase = v1alpha1.LabelPhase
	// AnnotationSince is when the node entered its phase.
	AnnotationSince = v1alpha1.AnnotationSince
	// AnnotationFailed marks a node that failed in its rollout.
	AnnotationFailed = v1alpha1.AnnotationFailed
	// AnnotationAdminCordoned records that someone else holds the node's
	// cordon, so no rollout uncordons it.
	AnnotationAdminCordoned = v1alpha1.AnnotationAdminCordoned

	// LabelDriver is the driver version a node should run; flipping it
	// moves the node between the operator's driver DaemonSets.
	LabelDriver = v1alpha1.LabelDriver
	// LabelDriverVersion is GPU Feature Discovery's report of the driver
	// the node runs.
	LabelDriverVersion = v1alpha1.LabelGFDDriverFull

	// LabelQuarantined is the default quarantine label.
	LabelQuarantined = v1alpha1.LabelQuarantined
	// TaintQuarantined is the default quarantine taint key.
	TaintQuarantined = v1alpha1.TaintQuarantined

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
