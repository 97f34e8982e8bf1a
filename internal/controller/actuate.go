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
// owner, the phase, since-when, the failure and admin-cordon marks, the
// cordon, the driver label and the quarantine marks go together, so the
// progress recorded on a node never disagrees with what was done to it.
//
// The patch carries the resourceVersion the pass read, so the API server
// refuses it (409 Conflict) if the node changed since. That is how a node
// gets one owner: two rollouts, or two controllers, that both saw a node
// free both send their claim, and only the first one applies. It also keeps
// a decision made on a stale view from undoing someone's later change (an
// admin's cordon, a taint): the caller re-plans from a fresh read.
func (r *Reconciler) actuate(ctx context.Context, ro *v1alpha1.DriverRollout, node *corev1.Node, t planner.Transition, now time.Time) (*corev1.Node, error) {
	want := transitionNode(node, ro, t, now)
	patch := client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})
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
	// The progress marks follow the planner's one rule and the API's one
	// encoding, so the node says what the planner and the simulator think
	// it says.
	state, unschedulable := t.Next(v1alpha1.NodeStateOf(n.Labels, n.Annotations), n.Spec.Unschedulable, ro.Name, now)
	state.Encode(n.Labels, n.Annotations)
	n.Spec.Unschedulable = unschedulable
	if t.Driver != "" {
		n.Labels[v1alpha1.LabelDriver] = t.Driver
	}
	if t.Pool != "" {
		n.Labels[v1alpha1.LabelPool] = t.Pool
	}
	operatorMarks(n, t)
	ofedMarks(n, t)
	draMarks(n, t)
	if t.Quarantine {
		maps.Copy(n.Labels, quarantineLabels(&ro.Spec.Quarantine))
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
	return map[string]string{v1alpha1.LabelQuarantined: "true"}
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

// releaseNode returns a copy of node as deleting its rollout leaves it
// (planner.Release): the rollout's owner label and progress marks removed,
// so another rollout may take the node. It is never uncordoned: a node in
// flight or quarantined keeps the rollout's cordon (and a quarantined one
// its quarantine), because someone must look at it, and a cordon on a node
// that is Pending, Done or rolled back is someone else's, which the
// rollout never lifts. The admin-cordon mark stays while the node is
// cordoned. It reports whether anything changed.
func releaseNode(node *corev1.Node) (*corev1.Node, bool) {
	n := node.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	planner.Released(v1alpha1.NodeStateOf(n.Labels, n.Annotations), n.Spec.Unschedulable).Encode(n.Labels, n.Annotations)
	changed := !maps.Equal(n.Labels, node.Labels) || !maps.Equal(n.Annotations, node.Annotations)
	return n, changed
}
