package dashboard

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
)

// clusterWatch is one cluster watched: its connection (the API server,
// the informer cache, the readiness probe and what they say of the
// cluster's health), its rebuildLoop (the view, rebuilt when something
// changed, with the nodes' timelines) and, inside the loop, its
// explainSchedule (when to ask why the cluster has not converged). run
// plays them on one goroutine, the watch's, until the dashboard stops
// watching the cluster.
//
// Its own fields never change once the Dashboard stored it (syncWatches
// sets cancel before that, under the Dashboard's mutex), so any goroutine
// may read them and call its methods: the watch's, the probe's, the
// informers' handlers, and the HTTP and SSE handlers (wake, Stats). What
// changes lives in the parts, each guarded its own way (see each type),
// and in counters, which are atomics.
type clusterWatch struct {
	d             *Dashboard
	name, context string
	counts        counters
	conn          *connection
	loop          *rebuildLoop
	// cancel stops the watch; done is closed when run returned.
	cancel context.CancelFunc
	done   chan struct{}
}

// counters are a cluster's costs, for Stats: atomics, added to by the
// connection's transport on any goroutine that makes a request (requests)
// and by the rebuild loop (rebuilds), read by the HTTP handlers.
type counters struct {
	requests atomic.Int64
	rebuilds atomic.Int64
}

func newClusterWatch(d *Dashboard, name, context string) *clusterWatch {
	w := &clusterWatch{d: d, name: name, context: context, done: make(chan struct{})}
	w.loop = &rebuildLoop{w: w, dirty: make(chan struct{}, 1)}
	w.loop.explain = &explainSchedule{ex: d.o.Explain, query: ExplainQuery{Cluster: name, Kubeconfig: d.o.Kubeconfig},
		timeout: d.o.ReadTimeout, now: d.o.Now, answered: w.loop.wake}
	w.conn = &connection{cluster: name, context: context, o: &d.o, health: &health{}, requests: &w.counts.requests,
		probeNow: make(chan struct{}, 1), unreachable: w.publishDown, answering: w.loop.wake}
	return w
}

// signal sends on a channel with room for one without waiting: a signal
// already pending says it all.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run keeps the view until ctx ends.
func (w *clusterWatch) run(ctx context.Context) {
	defer close(w.done)
	w.publishDown(errors.New("connecting"))
	for ctx.Err() == nil {
		w.watch(ctx)
	}
}

// watch connects to the cluster and keeps its view until ctx ends, or
// until the fleet file places an operator's Deployment in a namespace the
// cache does not hold (an install adopted, or moved): it returns then, and
// run connects again with the new namespaces. The connection's probe and
// cache end with it.
func (w *clusterWatch) watch(ctx context.Context) {
	namespaces := w.operatorNamespaces()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := w.conn.open(ctx, namespaces)
	if c == nil {
		return
	}
	w.loop.run(ctx, c, namespaces)
}

// wake asks for a rebuild of the view (the fleet file changed).
func (w *clusterWatch) wake() { w.loop.wake() }

// operatorNamespaces are the namespaces of the cluster's operators as the
// fleet file stands (render.Operators): the cache holds their Deployments,
// which the gate reads in the manifests chart mode, and no other
// namespace's (a cluster of the serving stack has many other Deployments).
func (w *clusterWatch) operatorNamespaces() []string {
	f, _, _ := w.d.fleetNow()
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

// base is the part of a view that comes from the fleet file alone.
func (w *clusterWatch) base(f *fleet.Fleet) *ClusterView {
	cs := w.d.clusterStatus(w.name)
	v := &ClusterView{Name: w.name, Wave: cs.Wave, Context: w.context, Release: cs.Release, State: cs.State, Waiting: w.d.clusterWaits(w.name)}
	if f != nil {
		v.Engine = f.EngineFor(w.name).Name()
	}
	return v
}

// downView is the view of a cluster that could not be read: no check,
// no rollout, only the error. The last view is never shown as current.
func (w *clusterWatch) downView(err error) *ClusterView {
	f, _, _ := w.d.fleetNow()
	v := w.base(f)
	v.Error = err.Error()
	v.Verdict = gate.Unknown
	v.Gate = string(gate.Unknown) + " (connect)"
	v.LastReach = w.conn.health.lastReached()
	v.Read = w.d.o.Now()
	return v
}

// publishDown shows the cluster unreachable with err, at once.
func (w *clusterWatch) publishDown(err error) { w.publish(w.downView(err)) }

func (w *clusterWatch) publish(v *ClusterView) { w.d.publish(v) }
