package testbed

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Update changes one object the way a controller would: get, mutate,
// update (the status subresource when status is set), retried on
// conflicts with the controllers running beside the test.
func Update(ctx context.Context, c client.Client, apiVersion, kind, ns, name string, status bool, mutate func(*unstructured.Unstructured)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		mutate(u)
		if status {
			return c.Status().Update(ctx, u)
		}
		return c.Update(ctx, u)
	})
}
