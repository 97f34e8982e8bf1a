package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// supersededBy reports whether written, the version that last acted on a
// rollout, is newer than mine. Only two semantic versions compare: a
// build without one ("(devel)", a test's empty version) neither refuses
// nor is refused, as it cannot say which is newer.
func supersededBy(written, mine string) bool {
	order, ok := versions.Compare(written, mine)
	return ok && order > 0
}

// superseded leaves ro alone, saying why on its Superseded condition (once:
// the condition is written only when it changes). No node is read or
// written: the nodes are as the newer version left them, and it goes on
// with them when it runs again.
func (r *Reconciler) superseded(ctx context.Context, ro *v1alpha1.DriverRollout) error {
	before := ro.DeepCopy()
	changed := meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionSuperseded, Status: metav1.ConditionTrue, Reason: "NewerController",
		ObservedGeneration: ro.Generation,
		Message: fmt.Sprintf("gpufleet-controller %s acted on this rollout; this one is %s and leaves it and its nodes alone: "+
			"an older controller never takes over what a newer one wrote", ro.Status.ControllerVersion, r.Version),
	})
	if !changed {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, ro, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}
