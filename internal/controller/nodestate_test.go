package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// TestNodeWritesMatchThePlanner: what the controller writes on a node for a
// transition (transitionNode) or a release (releaseNode), read back the
// way a restarted controller reads it (observeNode), is what the planner
// and the simulator think the transition leaves (planner.ApplyTo,
// planner.Release). One side changing alone fails here.
func TestNodeWritesMatchThePlanner(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 22, 0, 0, 0, time.UTC)
	now := t0.Add(7 * time.Minute)
	ro := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: "r1"}}
	nodes := map[string]*corev1.Node{
		"free":                {ObjectMeta: metav1.ObjectMeta{Name: "n"}},
		"admin-cordoned free": {ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}},
		"ours, draining": {ObjectMeta: metav1.ObjectMeta{Name: "n",
			Labels:      map[string]string{v1alpha1.LabelRollout: "r1", v1alpha1.LabelPhase: string(v1alpha1.NodeDraining)},
			Annotations: map[string]string{v1alpha1.AnnotationSince: t0.Format(time.RFC3339Nano)}}, Spec: corev1.NodeSpec{Unschedulable: true}},
		"ours, failed, marked": {ObjectMeta: metav1.ObjectMeta{Name: "n",
			Labels:      map[string]string{v1alpha1.LabelRollout: "r1", v1alpha1.LabelPhase: string(v1alpha1.NodeRolledBack)},
			Annotations: map[string]string{v1alpha1.AnnotationSince: t0.Format(time.RFC3339Nano), v1alpha1.AnnotationFailed: "true", v1alpha1.AnnotationAdminCordoned: "true"}}, Spec: corev1.NodeSpec{Unschedulable: true}},
		"a gone rollout's, failed": {ObjectMeta: metav1.ObjectMeta{Name: "n",
			Labels:      map[string]string{v1alpha1.LabelRollout: "r0", v1alpha1.LabelPhase: string(v1alpha1.NodeSoaking)},
			Annotations: map[string]string{v1alpha1.AnnotationSince: t0.Format(time.RFC3339Nano), v1alpha1.AnnotationFailed: "true"}}},
	}
	transitions := map[string]planner.Transition{
		"start":            {To: v1alpha1.NodeDraining, Cordon: true},
		"start cordoned":   {To: v1alpha1.NodeDraining, RecordAdminCordon: true},
		"fail":             {To: v1alpha1.NodeRollingBack, Failure: true},
		"done, uncordon":   {To: v1alpha1.NodeDone, Uncordon: true},
		"settle as is":     {To: v1alpha1.NodeDone},
		"quarantine, fail": {To: v1alpha1.NodeQuarantined, Failure: true, Quarantine: true},
	}
	type carried struct {
		State         v1alpha1.NodeState
		Unschedulable bool
	}
	// view is the node as the planner holds it: what the node carries.
	view := func(node *corev1.Node) planner.Node {
		n := planner.Node{Name: node.Name, Unschedulable: node.Spec.Unschedulable}
		n.SetState(v1alpha1.NodeStateOf(node.Labels, node.Annotations))
		return n
	}
	read := func(node *corev1.Node) carried {
		return carried{v1alpha1.NodeStateOf(node.Labels, node.Annotations), node.Spec.Unschedulable}
	}
	opts := cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })
	for nn, node := range nodes {
		for tn, tr := range transitions {
			want := view(node)
			tr.ApplyTo(&want, ro.Name, now)
			if diff := cmp.Diff(carried{want.State(), want.Unschedulable}, read(transitionNode(node, ro, tr, now)), opts); diff != "" {
				t.Errorf("%s, %s: the controller writes what the planner does not expect (-planner +controller):\n%s", nn, tn, diff)
			}
		}
		want := view(node)
		planner.Release(&want)
		released, _ := releaseNode(node)
		if diff := cmp.Diff(carried{want.State(), want.Unschedulable}, read(released), opts); diff != "" {
			t.Errorf("%s, released (-planner +controller):\n%s", nn, diff)
		}
		// And the restarted controller's reading of its own write.
		if got := observeNode(transitionNode(node, ro, transitions["fail"], now), ro.Name, t0); !got.Since.Equal(now) || !got.Failed || got.Owner != ro.Name {
			t.Errorf("%s: observeNode after a failure: %+v", nn, got)
		}
	}
}
