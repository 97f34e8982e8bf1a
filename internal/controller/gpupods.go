package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The GPU pods of the cluster, for the cost of starting each pending node
// (planner.Node.GPUPods, GPUWork): which nodes run GPU work, and how much
// a drain would destroy. The manager's own cache holds driver pods only
// (by label); this is a cache of its own over every pod (the API server
// cannot select pods by the resources they request), whose transform keeps
// of a pod that holds a GPU only what the cost reads (its node, start time
// and GPU count) and of any other pod nothing but its name, which is all
// such a pod costs it. A pass reads the GPU pods alone, through an index
// that holds them (indexGPUPod), once for every pending node. Nothing is
// watched for it: a pod that starts or ends changes which node is
// cheapest, not whether a pass runs.

// gpuCountResource is where the transform keeps a GPU pod's GPU count, in
// its trimmed copy alone: the limit of its one container.
const gpuCountResource = corev1.ResourceName("gpufleet.io/gpus")

// indexGPUPod indexes the GPU pods of that cache (those the transform kept
// a node for) under one key, "true", so a pass reads them all at once
// without going over the cluster's other pods.
const indexGPUPod = "gpufleet.io/gpu-pod"

// newGPUPodCache is that cache, its GPU pods indexed (indexGPUPod).
func newGPUPodCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts cache.Options) (cache.Cache, error) {
	opts.Scheme = scheme
	opts.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: trimToGPUWork}}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("GPU pod cache: %w", err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, indexGPUPod, func(o client.Object) []string {
		if o.(*corev1.Pod).Spec.NodeName != "" {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("GPU pod cache: index its GPU pods: %w", err)
	}
	return c, nil
}

// trimToGPUWork keeps of a running pod that holds a GPU its name, node,
// start time and GPU count (as a limit of one container); of any other pod
// its name alone, without a node, so the index leaves it out. A pod that
// holds a GPU only through its ResourceClaims may: it keeps its claims
// (spec.resourceClaims and the names of those made from templates), and
// the pass decides on it with the claims it read (gpuWork), as a
// transform sees one pod and no claim. It may be given what it returned
// (the informer transforms an object it already holds again, on a
// relist), which it returns as it is.
func trimToGPUWork(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || trimmed(p) {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: p.TypeMeta}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = p.Name, p.Namespace, p.UID, p.ResourceVersion
	// Without its claims: does it hold a GPU by its resources or labels?
	byResources := planner.HoldsGPU(p, nil, noClaims{})
	if p.Status.Phase != corev1.PodRunning || !byResources && len(p.Spec.ResourceClaims) == 0 {
		return out, nil
	}
	out.Spec.NodeName = p.Spec.NodeName
	out.Status.Phase = p.Status.Phase
	out.Status.StartTime = p.Status.StartTime
	gpus := int64(gpusOf(p))
	if !byResources {
		out.Spec.ResourceClaims = p.Spec.ResourceClaims
		out.Status.ResourceClaimStatuses = p.Status.ResourceClaimStatuses
		gpus = 0 // the claims say it, in the pass
	}
	out.Spec.Containers = []corev1.Container{{Name: "gpus", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{gpuCountResource: *resource.NewQuantity(gpus, resource.DecimalSI)},
	}}}
	return out, nil
}

// noClaims is a planner.Claims that knows of no claim holding a GPU.
type noClaims struct{}

func (noClaims) GPUs(string, string) int { return 0 }

// trimmed says p is what trimToGPUWork returns: a pod with no spec but
// its node, or with the one container that holds its GPU count.
func trimmed(p *corev1.Pod) bool {
	switch len(p.Spec.Containers) {
	case 0:
		return true
	case 1:
		_, ok := p.Spec.Containers[0].Resources.Limits[gpuCountResource]
		return ok
	}
	return false
}

// gpusOf is how many GPUs (or MIG devices) pod p holds: the most any one
// container asks for, init containers included (the scheduler's reading of
// a pod's request), at least one for a pod that holds a GPU another way (a
// device claim, a renamed resource).
func gpusOf(p *corev1.Pod) int {
	most := 0
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		n := 0
		for i := range cs {
			n = max(n, gpuQuantity(cs[i].Resources.Limits), gpuQuantity(cs[i].Resources.Requests))
		}
		most = max(most, n)
	}
	return max(most, 1)
}

func gpuQuantity(l corev1.ResourceList) int {
	n := 0
	for name, q := range l {
		if planner.GPUResource(name) {
			n += int(q.Value())
		}
	}
	return n
}

// nodeGPUWork is what a node's GPU pods hold: how many, and their
// GPU-seconds in flight.
type nodeGPUWork struct {
	pods    int
	seconds float64
}

// gpuWork is what the GPU pods of the cache say, at now, of the pending
// nodes among nodes[work], by node name: one read of the cache's GPU pods
// (an index of those alone), none when no node is pending or there is no
// cache.
//
// A pod kept for its claims counts when claims say one of them holds a GPU
// (or, claims nil, when it has any), its GPUs the devices they hold.
func (r *Reconciler) gpuWork(ctx context.Context, nodes []planner.Node, work []int, claims planner.Claims, now time.Time) (map[string]nodeGPUWork, error) {
	if r.GPUPods == nil {
		return nil, nil
	}
	pending := map[string]bool{}
	for _, i := range work {
		if ph := nodes[i].Phase; ph == "" || ph == v1alpha1.NodePending {
			pending[nodes[i].Name] = true
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	var pods corev1.PodList
	if err := r.GPUPods.List(ctx, &pods, client.MatchingFields{indexGPUPod: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list GPU pods: %w", err)
	}
	out := map[string]nodeGPUWork{}
	for _, p := range pods.Items {
		if !pending[p.Spec.NodeName] {
			continue
		}
		gpus := 1
		if len(p.Spec.Containers) == 1 {
			if q, ok := p.Spec.Containers[0].Resources.Limits[gpuCountResource]; ok {
				gpus = int(q.Value())
			}
		}
		if len(p.Spec.ResourceClaims) > 0 && gpus == 0 {
			// Kept for its claims alone (trimToGPUWork).
			if !planner.HoldsGPU(&p, nil, claims) {
				continue
			}
			gpus = 1
			if claims != nil {
				gpus = planner.ClaimedGPUs(&p, claims)
			}
		}
		w := out[p.Spec.NodeName]
		w.pods++
		if p.Status.StartTime != nil && now.After(p.Status.StartTime.Time) {
			w.seconds += float64(gpus) * now.Sub(p.Status.StartTime.Time).Seconds()
		}
		out[p.Spec.NodeName] = w
	}
	return out, nil
}
