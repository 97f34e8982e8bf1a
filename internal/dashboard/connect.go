package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// connection is the dashboard's link to one cluster's API server. It
// connects, again every ProbeInterval until the cluster answers; keeps
// that connection's informer cache running; asks the API server whether
// it is ready every ProbeInterval, and at once when a request could not
// be sent or a watch failed; and records what it learns in health.
//
// Its fields are set by newClusterWatch and never change, so any goroutine
// may read them. What changes is elsewhere, each with its own guard: the
// cluster's health (health's mutex), the request count (an atomic of the
// watch's counters), and probeNow (a signal with room for one).
type connection struct {
	cluster, context string
	o                *Options
	health           *health
	// requests counts every request the connection makes (counting).
	requests *atomic.Int64
	// probeNow is sent by counting (from any goroutine that makes a
	// request) and by watchFailed (the reflectors' goroutines); only the
	// probe receives.
	probeNow chan struct{}
	// unreachable shows the cluster unreachable with the error, at once;
	// answering wakes the rebuild loop when the cluster answers again.
	// The probe calls both from its own goroutine.
	unreachable func(error)
	answering   func()
}

// open connects to the cluster, again every ProbeInterval until it can (a
// kubeconfig fixed later, or a cluster that answers discovery only later,
// is picked up), then starts the probe and the informer cache, both until
// ctx ends, and returns the cache once its informers started. The cache
// holds the operators' Deployments of namespaces. It returns nil when ctx
// ends first. The watch's goroutine calls it.
func (c *connection) open(ctx context.Context, namespaces []string) cache.Cache {
	var ca cache.Cache
	var p prober
	for {
		var err error
		if ca, p, err = c.dial(ctx, namespaces); err == nil {
			c.health.setDown(nil)
			break
		}
		c.health.setDown(err)
		c.unreachable(err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.o.ProbeInterval):
		}
	}
	go c.probe(ctx, p)
	go func() {
		if err := ca.Start(ctx); err != nil {
			c.o.Logf("cluster %s: informers: %v", c.cluster, err)
		}
	}()
	// Reads before the cache has started fail; it has no informer yet, so
	// this returns as soon as it has.
	ca.WaitForCacheSync(ctx)
	return ca
}

// dial makes the connection's REST config, prober and cache, once.
func (c *connection) dial(ctx context.Context, namespaces []string) (cache.Cache, prober, error) {
	cfg, err := restConfigFor(c.o.Kubeconfig, c.context)
	if err != nil {
		return nil, prober{}, err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return counting{next: rt, n: c.requests, failed: func() { signal(c.probeNow) }}
	})
	// Asked first, so that a cluster that is not there says so plainly
	// rather than through the cache's discovery.
	p, err := newProber(cfg, c.o.ProbeInterval)
	if err != nil {
		return nil, prober{}, err
	}
	if err := p.ready(ctx); err != nil {
		return nil, prober{}, err
	}
	ca, err := newCache(cfg, namespaces, c.watchFailed, c.o.Now)
	if err != nil {
		return nil, prober{}, err
	}
	return ca, p, nil
}

// watchFailed is the informers' watch error handler: it records the error
// (shown as a warning while the cluster answers) and probes at once.
func (c *connection) watchFailed(err error) {
	// A watch that expired (410) or ended lists again and loses nothing.
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	c.health.watchFailed(err, c.o.Now())
	signal(c.probeNow)
}

// probe asks the API server whether it is ready every ProbeInterval (and
// at once after a watch error). A failure shows the cluster unreachable
// straight away: the rebuild loop may be blocked reading an informer that
// cannot sync.
func (c *connection) probe(ctx context.Context, p prober) {
	t := time.NewTicker(c.o.ProbeInterval)
	defer t.Stop()
	for {
		err := p.ready(ctx)
		if ctx.Err() != nil {
			return
		}
		was := c.health.probed(err, c.o.Now())
		switch {
		case err != nil:
			c.unreachable(err)
		case was != nil:
			c.answering()
		}
		// The probe's own failed request signals probeNow: drop it, and
		// probe at most once a second however often requests fail.
		select {
		case <-c.probeNow:
		default:
		}
		next := time.Now().Add(time.Second)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.probeNow:
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
		}
	}
}

// health is what the connection knows of whether its cluster answers. One
// mutex guards all of it, for four writers and two readers on their own
// goroutines: the watch's goroutine sets down while it connects
// (connection.open) and lastReach when the rebuild loop read the cluster
// well; the probe sets down and lastReach; the informers' reflectors set
// watchErr and watchAt (connection.watchFailed). The rebuild loop reads
// it all (state), and a view of the cluster unreachable, built on the
// watch's goroutine or the probe's, reads lastReach.
type health struct {
	mu sync.Mutex
	// down is the probe's (or the connecting's) last failure; nil while
	// the cluster answers.
	down error
	// watchErr is the last watch error, at watchAt.
	watchErr error
	watchAt  time.Time
	// lastReach is when the cluster last answered.
	lastReach time.Time
}

// healthState is a copy of health, read at once.
type healthState struct {
	down, watchErr error
	watchAt        time.Time
}

func (h *health) setDown(err error) {
	h.mu.Lock()
	h.down = err
	h.mu.Unlock()
}

// probed records a probe's answer, at now, and returns the failure it
// replaces (nil when the cluster answered before).
func (h *health) probed(err error, now time.Time) (was error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	was = h.down
	h.down = err
	if err == nil {
		h.lastReach = now
	}
	return was
}

func (h *health) watchFailed(err error, at time.Time) {
	h.mu.Lock()
	h.watchErr, h.watchAt = err, at
	h.mu.Unlock()
}

// reached records that the cluster answered at t.
func (h *health) reached(t time.Time) {
	h.mu.Lock()
	h.lastReach = t
	h.mu.Unlock()
}

func (h *health) lastReached() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastReach
}

func (h *health) state() healthState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return healthState{down: h.down, watchErr: h.watchErr, watchAt: h.watchAt}
}

// prober asks an API server whether it is ready (GET /readyz, which
// every authenticated user may read), each time within interval or 5 s,
// over one connection kept for it.
type prober struct {
	dc       *discovery.DiscoveryClient
	interval time.Duration
}

func newProber(cfg *rest.Config, interval time.Duration) (prober, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	return prober{dc: dc, interval: interval}, err
}

func (p prober) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(p.interval, 5*time.Second))
	defer cancel()
	if _, err := p.dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("API server not ready: %w", err)
	}
	return nil
}

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
