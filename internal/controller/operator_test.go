package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// TestOperatorMarksGoWithTheMove: a hold sets the operator's skip label, a
// release removes it, and a release of a cordoned node writes the
// operator's initial-state record, in the same patch as the progress; no
// cordon changes on this path.
func TestOperatorMarksGoWithTheMove(t *testing.T) {
	ro := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: v1alpha1.DriverRolloutSpec{Actuator: v1alpha1.ActuatorGPUOperator}}
	now := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}

	held := transitionNode(node, ro, planner.Transition{Node: "n", From: v1alpha1.NodePending, To: v1alpha1.NodePending, Hold: true}, now)
	if held.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" || held.Labels[v1alpha1.LabelRollout] != "r" {
		t.Fatalf("hold: labels %v", held.Labels)
	}
	held.Spec.Unschedulable = true // an admin's
	rel := transitionNode(held, ro, planner.Transition{Node: "n", From: v1alpha1.NodePending, To: v1alpha1.NodeInstalling, Release: true, KeepCordon: true, RecordAdminCordon: true}, now)
	if _, ok := rel.Labels[v1alpha1.LabelOperatorUpgradeSkip]; ok {
		t.Errorf("release: skip label left: %v", rel.Labels)
	}
	if rel.Annotations[v1alpha1.AnnotationOperatorInitialUnschedulable] != "true" || rel.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
		t.Errorf("release of a cordoned node: annotations %v", rel.Annotations)
	}
	if !rel.Spec.Unschedulable || rel.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeInstalling) {
		t.Errorf("release: unschedulable %t phase %q", rel.Spec.Unschedulable, rel.Labels[v1alpha1.LabelPhase])
	}
	plain := transitionNode(node, ro, planner.Transition{Node: "n", From: v1alpha1.NodePending, To: v1alpha1.NodeInstalling, Release: true, KeepCordon: true}, now)
	if _, ok := plain.Annotations[v1alpha1.AnnotationOperatorInitialUnschedulable]; ok {
		t.Errorf("a schedulable node got the operator's cordon record")
	}
}
