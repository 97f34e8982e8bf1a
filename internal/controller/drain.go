package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// drainResult is what one drain pass over a node did.
type drainResult struct {
	// left: pods still on the node that block the drain.
	left int
	// evicted and blocked count this pass's eviction requests; blocked
	// ones were refused by a PodDisruptionBudget (429) and are retried on
	// a later pass, until the drain timeout fails the node.
	evicted, blocked int
}

// drain asks the Eviction API (policy/v1) to evict every pod that blocks
// the node's drain, so PodDisruptionBudgets are honoured. DaemonSet pods
// (the driver among them) and mirror pods stay. Pods already terminating
// are waited for, not evicted again.
func (r *Reconciler) drain(ctx context.Context, node string) (drainResult, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{indexPodNode: node}); err != nil {
		return drainResult{}, fmt.Errorf("list pods on node %s: %w", node, err)
	}
	var res drainResult
	for _, p := range podsToDrain(pods.Items) {
		res.left++
		if p.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := r.Client.SubResource("eviction").Create(ctx, &p, ev)
		switch {
		case err == nil:
			res.evicted++
			r.Metrics.eviction("evicted")
		case apierrors.IsNotFound(err):
			res.left--
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget allows no disruption now: retry later.
			res.blocked++
			r.Metrics.eviction("blocked")
		default:
			r.Metrics.eviction("error")
			log.FromContext(ctx).Info("eviction failed", "node", node, "pod", client.ObjectKeyFromObject(&p).String(), "error", err.Error())
		}
	}
	return res, nil
}
