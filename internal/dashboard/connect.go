package dashboard

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// restConfigFor is the REST config of a kubeconfig context, by the gate's
// rules (gate.Kubeconfig.RESTConfig), tuned for long-lived watches.
func restConfigFor(kubeconfig, context string) (*rest.Config, error) {
	k, err := gate.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg, err := k.RESTConfig(context)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 20, 40
	// Each informer's watch stays open; compressed, each holds a gzip
	// reader and its 32 KiB window (measured: 45 MiB of the heap for 200
	// clusters of 7 watches), for events of a few kilobytes.
	cfg.DisableCompression = true
	cfg.UserAgent = "gpufleet-dashboard"
	return cfg, nil
}

// counting counts the requests a cluster's connection makes (for the
// stats and the benchmark: API requests per cluster per minute), and tells
// failed when one could not be sent at all. An informer whose watch breaks
// retries a refused connection by itself without calling its error
// handler, so this is the first sign that a cluster went away.
type counting struct {
	next   http.RoundTripper
	n      *atomic.Int64
	failed func()
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err != nil && r.Context().Err() == nil {
		c.failed()
	}
	return resp, err
}

// slimNode keeps of a Node what the gate and the page read (its name,
// labels and annotations, cordon and taints, conditions) and drops the
// rest of its status: images, capacity, addresses, node info. At 100 nodes
// a cluster and 200 clusters, the status is most of what a cache holds.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.ManagedFields = nil
	n.Status = corev1.NodeStatus{Conditions: n.Status.Conditions}
	return n, nil
}

// newCache builds the informer cache of one cluster. It holds only what
// the gate reads: the operators' Deployments in their namespaces (a
// cluster of the serving stack has many other Deployments), and
// cluster-wide Flux's Kustomizations and HelmReleases, the GPU Operator's
// objects, Nodes and DriverRollouts. Only built-in kinds are narrowed by
// namespace: narrowing a kind makes the cache resolve it when it is
// built, and a CRD not installed yet (no HelmRelease where helm-controller
// is not used, no GPU Operator before Flux applied it) would fail the
// whole cache rather than read as missing. Managed fields, and most of a Node's status
// (slimNode), are dropped before they are stored: nothing reads them.
func newCache(cfg *rest.Config, namespaces []string, onWatchError func(error), now func() time.Time) (cache.Cache, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	dynamic, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	operators := map[string]cache.Config{}
	for _, ns := range namespaces {
		operators[ns] = cache.Config{}
	}
	if len(operators) == 0 {
		// No namespace would mean every namespace: hold the default one.
		operators[fleet.DefaultGPUOperatorNamespace] = cache.Config{}
	}
	strip := cache.TransformStripManagedFields()
	// Nothing here mutates what it reads (gate.Observe and Evaluate, and
	// this package's view, only look), so the Node list, read on every
	// rebuild, is handed out without a deep copy.
	noCopy := true
	return cache.New(cfg, cache.Options{
		HTTPClient:       hc,
		Mapper:           newRememberMisses(dynamic, now),
		Scheme:           gate.Scheme(),
		DefaultTransform: strip,
		// The page shows a cluster's watch errors; client-go's own handler
		// would only log them, once per retry, for every unreachable cluster.
		DefaultWatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) { onWatchError(err) },
		ByObject: map[client.Object]cache.ByObject{
			gate.KindDeployment.Object(): {Namespaces: operators},
			gate.KindNode.Object():       {UnsafeDisableDeepCopy: &noCopy, Transform: slimNode},
		},
	})
}
