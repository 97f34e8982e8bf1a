package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// SetupWithManager registers the cache indexes the reconciler reads by and
// the controller with its watches: DriverRollouts, and everything that can
// move a node forward (the node, its driver pod, Events about it). The
// cache holds only driver pods (see cacheOptions), so the other pods of a
// node being drained are read by drainPods, not watched.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, name string) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &corev1.Pod{}, indexPodNode, podNode); err != nil {
		return fmt.Errorf("index pods by node: %w", err)
	}
	if err := idx.IndexField(ctx, &corev1.Event{}, indexEventNode, func(o client.Object) []string {
		if e := o.(*corev1.Event); e.InvolvedObject.Kind == "Node" {
			return []string{e.InvolvedObject.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index events by node: %w", err)
	}
	store, err := nodeStore(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	r.nodeStore = store
	all := handler.EnqueueRequestsFromMapFunc(r.allRollouts)
	onNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		switch o := o.(type) {
		case *corev1.Pod:
			return o.Spec.NodeName != ""
		case *corev1.Event:
			return o.InvolvedObject.Kind == "Node"
		}
		return true
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&v1alpha1.DriverRollout{}).
		Watches(&corev1.Node{}, all).
		Watches(&corev1.Pod{}, all, builder.WithPredicates(onNode)).
		Watches(&corev1.Event{}, all, builder.WithPredicates(onNode)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// nodeStore is the store of c's node informer, which listNodes reads in
// place: the same objects the cache client hands out, without copying each
// into a list. Nil for a cache whose informers are not client-go's: the
// client's list then.
func nodeStore(ctx context.Context, c cache.Cache) (toolscache.Store, error) {
	inf, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
		return s.GetStore(), nil
	}
	return nil, nil
}

// allRollouts maps any watched change to every DriverRollout: there are few
// of them, and the work queue folds repeated requests into one pass.
func (r *Reconciler) allRollouts(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.DriverRolloutList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, ro := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ro.Name}})
	}
	return out
}

// podNode indexes a pod by the node it runs on.
func podNode(o client.Object) []string {
	if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
		return []string{n}
	}
	return nil
}
