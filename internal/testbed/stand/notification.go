package stand

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PlayNotificationController marks every Receiver Ready, as
// notification-controller would, until ctx ends: a testbed that does not
// run notification-controller still applies the serving stack's push
// Receiver, and the infra-webhook Kustomization (wait: true) waits for it.
func PlayNotificationController(ctx context.Context, c client.Client) {
	every(ctx, 250*time.Millisecond, func() { markReceivers(ctx, c) })
}

// every calls fn every period until ctx ends.
func every(ctx context.Context, period time.Duration, fn func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fn()
	}
}

// markReceivers sets the status of each Receiver whose spec it has not
// seen yet (observedGeneration behind), as notification-controller would.
func markReceivers(ctx context.Context, c client.Client) {
	receivers := &unstructured.UnstructuredList{}
	receivers.SetAPIVersion("notification.toolkit.fluxcd.io/v1")
	receivers.SetKind("ReceiverList")
	if err := c.List(ctx, receivers); err != nil {
		return // the CRD is not installed (yet): nothing to mark
	}
	for i := range receivers.Items {
		r := &receivers.Items[i]
		if gen, _, _ := unstructured.NestedInt64(r.Object, "status", "observedGeneration"); gen == r.GetGeneration() {
			continue
		}
		r.Object["status"] = map[string]any{
			"observedGeneration": r.GetGeneration(),
			"webhookPath":        "/hook/simulated-" + r.GetName(),
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Succeeded",
				"message":            "simulated notification-controller: Receiver initialized",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		}
		_ = c.Status().Update(ctx, r)
	}
}
