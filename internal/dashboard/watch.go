package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
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

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
)

// clusterWatch keeps one cluster's view: its informers, its readiness
// probe and the loop that rebuilds the view when something changed.
type clusterWatch struct {
	d       *Dashboard
	name    string
	context string
	// dirty is signalled by the informers' handlers; probeNow by a watch
	// error, so that a cluster that went away is probed at once.
	dirty    chan struct{}
	probeNow chan struct{}
	requests atomic.Int64
	rebuilds atomic.Int64
	cancel   context.CancelFunc
	done     chan struct{}

	mu       sync.Mutex
	down     error // the probe's last failure; nil while it answers
	watchErr error
	// watchAt is when watchErr happened.
	watchAt time.Time
	// lastReach is when the cluster last answered.
	lastReach time.Time

	// Touched only by the rebuild loop.
	// hist is each node's timeline in the rollout histFor names: a new
	// rollout (the next release) starts every timeline afresh, so that
	// the Done of the last one does not read as a phase of this one.
	hist        map[string][]Segment
	histFor     string
	explainRev  string
	explainGen  uint64
	explainKey  string
	handlers    map[string]bool
	explainAt   time.Time
	explanation *Explanation
	explainErr  string
	explaining  atomic.Bool
}

func newClusterWatch(d *Dashboard, name, context string) *clusterWatch {
	return &clusterWatch{d: d, name: name, context: context,
		dirty: make(chan struct{}, 1), probeNow: make(chan struct{}, 1), done: make(chan struct{}),
		hist: map[string][]Segment{}, handlers: map[string]bool{}}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run keeps the view until ctx ends.
func (w *clusterWatch) run(ctx context.Context) {
	defer close(w.done)
	w.publish(w.downView(errors.New("connecting")))
	for ctx.Err() == nil {
		w.watch(ctx)
	}
}

// watch connects to the cluster and keeps its view until ctx ends, or
// until the fleet file places an operator's Deployment in a namespace the
// cache does not hold (an install adopted, or moved): it returns then, and
// run connects again with the new namespaces.
func (w *clusterWatch) watch(ctx context.Context) {
	o := w.d.o
	namespaces := w.operatorNamespaces()
	// The connection is made again until it can be: a kubeconfig fixed
	// later, or a cluster that answers discovery only later, is picked up.
	var c cache.Cache
	var cfg *rest.Config
	var p prober
	for {
		var err error
		if cfg, err = restConfigFor(o.Kubeconfig, w.context); err == nil {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return counting{next: rt, n: &w.requests, failed: func() { signal(w.probeNow) }}
			})
			// Asked first, so that a cluster that is not there says so
			// plainly rather than through the cache's discovery.
			if p, err = newProber(cfg, o.ProbeInterval); err == nil {
				if err = p.ready(ctx); err == nil {
					if c, err = newCache(cfg, namespaces, w.onWatchError, o.Now); err == nil {
						w.setDown(nil)
						break
					}
				}
			}
		}
		w.setDown(err)
		w.publish(w.downView(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.ProbeInterval):
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go w.probe(ctx, p)
	go func() {
		if err := c.Start(ctx); err != nil {
			o.Logf("cluster %s: informers: %v", w.name, err)
		}
	}()
	// Reads before the cache has started fail; it has no informer yet, so
	// this returns as soon as it has.
	c.WaitForCacheSync(ctx)
	w.handlers = map[string]bool{}
	var last time.Time
	for {
		if !subset(w.operatorNamespaces(), namespaces) {
			return
		}
		// A burst of changes is read once: a rebuild waits out the TTL
		// after the one before it.
		if wait := o.TTL - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		// Besides changes, the view is read again at Resync, or sooner
		// when the maintenance window opens or closes.
		wake := o.Resync
		if at := w.rebuild(ctx, c); !at.IsZero() {
			wake = min(wake, max(at.Sub(o.Now()), o.TTL))
		}
		timer := time.NewTimer(wake)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-w.dirty:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// operatorNamespaces are the namespaces of the cluster's operators as the
// fleet file stands (render.Operators): the cache holds their Deployments,
// which the gate reads in the manifests chart mode, and no other
// namespace's (a cluster of the serving stack has many other Deployments).
func (w *clusterWatch) operatorNamespaces() []string {
	f, _ := w.d.fleetNow()
	var out []string
	for _, op := range render.Operators(f, w.name) {
		if !slices.Contains(out, op.Namespace) {
			out = append(out, op.Namespace)
		}
	}
	return out
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func (w *clusterWatch) onWatchError(err error) {
	// A watch that expired (410) or ended lists again and loses nothing.
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	w.mu.Lock()
	w.watchErr, w.watchAt = err, w.d.o.Now()
	w.mu.Unlock()
	signal(w.probeNow)
}

func (w *clusterWatch) setDown(err error) {
	w.mu.Lock()
	w.down = err
	w.mu.Unlock()
}

// probe asks the API server whether it is ready every ProbeInterval (and
// at once after a watch error). A failure publishes the cluster as
// unreachable straight away: the rebuild loop may be blocked reading an
// informer that cannot sync.
func (w *clusterWatch) probe(ctx context.Context, p prober) {
	t := time.NewTicker(w.d.o.ProbeInterval)
	defer t.Stop()
	for {
		err := p.ready(ctx)
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		was := w.down
		if err != nil {
			w.down = err
		} else {
			w.down = nil
			w.lastReach = w.d.o.Now()
		}
		w.mu.Unlock()
		switch {
		case err != nil:
			w.publish(w.downView(w.down))
		case was != nil:
			signal(w.dirty)
		}
		// The probe's own failed request signals probeNow: drop it, and
		// probe at most once a second however often requests fail.
		select {
		case <-w.probeNow:
		default:
		}
		next := time.Now().Add(time.Second)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.probeNow:
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
		}
	}
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

// rebuild reads the cluster from the informers and publishes its view. It
// returns when it should be read again without a change: when the window
// opens or closes, or soon after a read that failed; zero for Resync.
func (w *clusterWatch) rebuild(ctx context.Context, c cache.Cache) time.Time {
	w.rebuilds.Add(1)
	f, rev := w.d.fleetNow()
	if f.Clusters[w.name] == nil {
		return time.Time{} // gone from the fleet file; the dashboard stops this watch
	}
	e := gate.Expect(f, w.name, rev)
	rctx, cancel := context.WithTimeout(ctx, w.d.o.ReadTimeout)
	o, err := gate.Observe(rctx, c, e)
	cancel()
	if ctx.Err() != nil {
		return time.Time{}
	}
	w.mu.Lock()
	down, watchErr, watchAt := w.down, w.watchErr, w.watchAt
	w.mu.Unlock()
	switch {
	case down != nil:
		w.publish(w.downView(down))
		return w.d.o.Now().Add(w.d.o.ProbeInterval)
	case err != nil:
		if watchErr != nil {
			err = fmt.Errorf("%w (last watch error: %v)", err, watchErr)
		}
		w.publish(w.downView(err))
		return w.d.o.Now().Add(w.d.o.ProbeInterval)
	}
	w.ensureHandlers(ctx, c, e)
	now := w.d.o.Now()
	w.mu.Lock()
	w.lastReach = now
	w.mu.Unlock()
	v := w.base(f)
	v.Reachable = true
	v.Read, v.LastReach = now, now
	// The API server answers, but a watch failed lately (a kind it may no
	// longer let us read): the informer keeps what it had, which may be
	// old. Said on the page rather than shown as current.
	if watchErr != nil && now.Sub(watchAt) < staleAfterWatchError {
		v.Warning = fmt.Sprintf("a watch failed at %s (%v): what is shown may be stale", watchAt.UTC().Format(time.TimeOnly), watchErr)
	}
	v.Checks = gate.Evaluate(e, o)
	adoption := gate.AdoptionOf(e, o)
	v.Adoption = &adoption
	rep := gate.Report{Checks: v.Checks}
	v.Verdict = rep.Verdict()
	v.Gate = gateSummary(w.d.clusterStatus(w.name), v.Checks)
	if w.histFor != e.Rollout {
		w.hist, w.histFor = map[string][]Segment{}, e.Rollout
	}
	v.Rollout = rolloutView(e, o, w.hist, now)
	w.explain(ctx, f, v)
	w.publish(v)
	return v.Rollout.WindowChange
}

// base is the part of a view that comes from the fleet file alone.
func (w *clusterWatch) base(f *fleet.Fleet) *ClusterView {
	cs := w.d.clusterStatus(w.name)
	return &ClusterView{Name: w.name, Wave: cs.Wave, Context: w.context, Release: cs.Release, State: cs.State, Waiting: w.d.clusterWaits(w.name)}
}

// downView is the view of a cluster that could not be read: no check,
// no rollout, only the error. The last view is never shown as current.
func (w *clusterWatch) downView(err error) *ClusterView {
	f, _ := w.d.fleetNow()
	v := w.base(f)
	v.Error = err.Error()
	v.Verdict = gate.Unknown
	v.Gate = string(gate.Unknown) + " (connect)"
	w.mu.Lock()
	v.LastReach = w.lastReach
	w.mu.Unlock()
	v.Read = w.d.o.Now()
	return v
}

func (w *clusterWatch) publish(v *ClusterView) { w.d.publish(v) }

// explain asks the Explainer about a cluster that has not converged, in
// the background and never more than one at a time: again when the gate's
// checks of the cluster changed (at most every explainAfterChange), and
// at most every explainEvery when nothing did. Its answer shows with the
// next rebuild, marked as older than the view while the checks changed
// since it was asked.
func (w *clusterWatch) explain(ctx context.Context, f *fleet.Fleet, v *ClusterView) {
	ex := w.d.o.Explain
	if ex == nil || v.Converged() {
		return
	}
	_, rev := w.d.fleetNow()
	gen := w.d.fleetGen()
	key := checksKey(v.Checks)
	w.mu.Lock()
	// An answer about another revision (or fleet file) is not shown: it
	// would explain a state that is gone, e.g. Flux "not at" a commit that
	// was replaced since.
	sameFleet := w.explainRev == rev && w.explainGen == gen
	if sameFleet && (w.explanation != nil || w.explainErr != "") {
		v.ExplainErr = w.explainErr
		if w.explanation != nil {
			e := *w.explanation
			e.Older = w.explainKey != key
			v.Explanation = &e
		}
	}
	current := sameFleet && w.explainKey == key
	w.mu.Unlock()
	since := time.Since(w.explainAt)
	if (current && since < explainEvery) || (!current && since < explainAfterChange) || !w.explaining.CompareAndSwap(false, true) {
		return
	}
	w.explainAt = time.Now()
	go func() {
		defer w.explaining.Store(false)
		ectx, cancel := context.WithTimeout(ctx, w.d.o.ReadTimeout)
		defer cancel()
		a, err := ex.Explain(ectx, ExplainQuery{Fleet: f, Cluster: w.name, Revision: rev, Kubeconfig: w.d.o.Kubeconfig})
		w.mu.Lock()
		defer w.mu.Unlock()
		w.explanation, w.explainErr, w.explainRev, w.explainGen, w.explainKey = a, "", rev, gen, key
		if a != nil {
			a.Asked = w.d.o.Now()
		}
		if err != nil {
			w.explanation, w.explainErr = nil, err.Error()
		}
		signal(w.dirty)
	}()
}

// checksKey sums up what the gate found, to tell when it changed.
func checksKey(cs []gate.Check) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Name.String())
		b.WriteByte('=')
		b.WriteString(string(c.Status))
		b.WriteByte(':')
		b.WriteString(c.Observed)
		b.WriteByte('\n')
	}
	return b.String()
}

// ensureHandlers subscribes the rebuild loop to the informers of the kinds
// the gate reads for e (gate.Reads), once each; a kind the cluster lacks
// (no GPU Operator CRDs yet) is tried again on the next rebuild.
func (w *clusterWatch) ensureHandlers(ctx context.Context, c cache.Cache, e gate.Expected) {
	for _, k := range gate.Reads(e) {
		kind, obj := k.GVK.Kind, k.Object()
		if w.handlers[kind] {
			continue
		}
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			continue
		}
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { signal(w.dirty) },
			DeleteFunc: func(any) { signal(w.dirty) },
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					signal(w.dirty)
				}
			},
		}
		if _, err := inf.AddEventHandler(h); err == nil {
			w.handlers[kind] = true
		}
	}
}

// changed says whether an update matters to the page. A Node's heartbeat
// (its conditions' times, a new Lease) changes nothing shown: at 100
// nodes a cluster, heartbeats would otherwise rebuild every view
// continuously.
func changed(old, cur any) bool {
	on, ok1 := old.(*corev1.Node)
	cn, ok2 := cur.(*corev1.Node)
	if ok1 && ok2 {
		return !maps.Equal(on.Labels, cn.Labels) || !maps.Equal(on.Annotations, cn.Annotations) ||
			on.Spec.Unschedulable != cn.Spec.Unschedulable || !sameConditions(on.Status.Conditions, cn.Status.Conditions)
	}
	oo, ok1 := old.(client.Object)
	co, ok2 := cur.(client.Object)
	return !ok1 || !ok2 || oo.GetResourceVersion() != co.GetResourceVersion()
}

func sameConditions(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status {
			return false
		}
	}
	return true
}
