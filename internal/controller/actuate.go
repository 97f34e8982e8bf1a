package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// actuate performs one transition on its node with a single patch: the
// phase, since-when, the failure and admin-cordon marks, the cordon, the
// driver label and the quarantine marks go together, so the progress
// recorded on a node never disagrees with what was done to it.
func (r *Reconciler) actuate(ctx context.Context, ro *v1alpha1.DriverRollout, node *corev1.Node, t planner.Transition, now time.Time) (*corev1.Node, error) {
	want := transitionNode(node, ro, t, now)
	var patch client.Patch = client.MergeFrom(node)
	if t.Quarantine {
		// A merge patch replaces the whole taint list: make sure nobody
		// changed it since it was read, or a taint of theirs is lost.
		patch = client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})
	}
	if err := r.Client.Patch(ctx, want, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("node %s %s → %s: node is gone: %w", t.Node, t.From, t.To, err)
		}
		return nil, fmt.Errorf("node %s %s → %s: %w", t.Node, t.From, t.To, err)
	}
	return want, nil
}

// transitionNode returns a copy of node as transition t leaves it.
func transitionNode(node *corev1.Node, ro *v1alpha1.DriverRollout, t planner.Transition, now time.Time) *corev1.Node {
	n := node.DeepCopy()
	n.Labels = maps.Clone(n.Labels)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Annotations = maps.Clone(n.Annotations)
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if n.Labels[LabelRollout] != ro.Name {
		// The node's marks from an earlier rollout describe that one.
		delete(n.Annotations, AnnotationFailed)
		delete(n.Annotations, AnnotationAdminCordoned)
	}
	n.Labels[LabelRollout] = ro.Name
	n.Labels[LabelPhase] = string(t.To)
	n.Annotations[AnnotationSince] = now.UTC().Format(time.RFC3339Nano)
	if t.Failure {
		n.Annotations[AnnotationFailed] = "true"
	}
	if t.RecordAdminCordon {
		n.Annotations[AnnotationAdminCordoned] = "true"
	}
	if t.Cordon {
		n.Spec.Unschedulable = true
	}
	if t.Uncordon {
		n.Spec.Unschedulable = false
	}
	if t.Driver != "" {
		n.Labels[LabelDriver] = t.Driver
	}
	if t.Quarantine {
		for k, v := range quarantineLabels(&ro.Spec.Quarantine) {
			n.Labels[k] = v
		}
		taint := quarantineTaint(&ro.Spec.Quarantine)
		if !slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&taint) }) {
			n.Spec.Taints = append(slices.Clone(n.Spec.Taints), taint)
		}
	}
	return n
}

// quarantineLabels are the spec's quarantine labels, or the default one.
func quarantineLabels(q *v1alpha1.QuarantineSpec) map[string]string {
	if len(q.Labels) > 0 {
		return q.Labels
	}
	return map[string]string{LabelQuarantined: "true"}
}

// quarantineTaint is the spec's quarantine taint, or the default one.
func quarantineTaint(q *v1alpha1.QuarantineSpec) corev1.Taint {
	if q.Taint != nil {
		t := *q.Taint
		t.TimeAdded = nil
		return t
	}
	return defaultQuarantineTaint()
}

// releaseNode returns a copy of node with the rollout's progress marks
// removed, uncordoned when the rollout cordoned it and it is back in
// service. A quarantined node keeps its quarantine and its cordon, and a
// node in flight keeps its cordon: someone must look at it. It reports
// whether anything changed.
func releaseNode(node *corev1.Node) (*corev1.Node, bool) {
	n := node.DeepCopy()
	phase := v1alpha1.NodePhase(n.Labels[LabelPhase])
	admin := n.Annotations[AnnotationAdminCordoned] == "true"
	changed := false
	for _, k := range []string{LabelRollout, LabelPhase} {
		if _, ok := n.Labels[k]; ok {
			delete(n.Labels, k)
			changed = true
		}
	}
	for _, k := range []string{AnnotationSince, AnnotationFailed, AnnotationAdminCordoned} {
		if _, ok := n.Annotations[k]; ok {
			delete(n.Annotations, k)
			changed = true
		}
	}
	if n.Spec.Unschedulable && !admin && (phase == v1alpha1.NodePending || phase == v1alpha1.NodeDone || phase == v1alpha1.NodeRolledBack) {
		n.Spec.Unschedulable = false
		changed = true
	}
	return n, changed
}
