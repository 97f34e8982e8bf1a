package dashboard

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/gate"
)

// rebuildLoop rebuilds one cluster's view from its connection's informer
// cache, by the gate's Observe and Evaluate, and publishes it: when
// something the page shows changed (at most once per TTL), when the
// maintenance window opens or closes, and at Resync. It keeps the nodes'
// timelines and has its explainSchedule say why a cluster has not
// converged.
//
// It runs on the watch's goroutine (clusterWatch.watch), the only one that
// touches its fields, with one exception: dirty, a signal with room for
// one, which any goroutine sends through wake: the informers' handlers,
// the probe when the cluster answers again, the explanation scheduler
// when an answer came, and the dashboard when the fleet file changed.
type rebuildLoop struct {
	w         *clusterWatch
	dirty     chan struct{}
	timelines timelines
	explain   *explainSchedule
}

// wake asks for a rebuild; any goroutine may call it.
func (l *rebuildLoop) wake() { signal(l.dirty) }

// run rebuilds the view from c until ctx ends, or until the fleet file
// places an operator in a namespace other than namespaces, the ones c
// holds: the watch then connects again.
func (l *rebuildLoop) run(ctx context.Context, c cache.Cache, namespaces []string) {
	o := &l.w.d.o
	in := &informers{c: c, subscribed: map[string]bool{}}
	var last time.Time
	for {
		if !subset(l.w.operatorNamespaces(), namespaces) {
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
		if at := l.rebuild(ctx, in); !at.IsZero() {
			wake = min(wake, max(at.Sub(o.Now()), o.TTL))
		}
		timer := time.NewTimer(wake)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-l.dirty:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// rebuild reads the cluster from the informers and publishes its view. It
// returns when it should be read again without a change: when the window
// opens or closes, or soon after a read that failed; zero for Resync.
func (l *rebuildLoop) rebuild(ctx context.Context, in *informers) time.Time {
	w, opts := l.w, &l.w.d.o
	w.counts.rebuilds.Add(1)
	f, rev, gen := w.d.fleetNow()
	if f.Clusters[w.name] == nil {
		return time.Time{} // gone from the fleet file; the dashboard stops this watch
	}
	e := gate.Expect(f, w.name, rev)
	rctx, cancel := context.WithTimeout(ctx, opts.ReadTimeout)
	o, err := gate.Observe(rctx, in.c, e)
	cancel()
	if ctx.Err() != nil {
		return time.Time{}
	}
	h := w.conn.health.state()
	switch {
	case h.down != nil:
		w.publishDown(h.down)
		return opts.Now().Add(opts.ProbeInterval)
	case err != nil:
		if h.watchErr != nil {
			err = fmt.Errorf("%w (last watch error: %v)", err, h.watchErr)
		}
		w.publishDown(err)
		return opts.Now().Add(opts.ProbeInterval)
	}
	in.subscribe(ctx, e, l.wake)
	now := opts.Now()
	w.conn.health.reached(now)
	v := w.base(f)
	v.Reachable = true
	v.Read, v.LastReach = now, now
	// The API server answers, but a watch failed lately (a kind it may no
	// longer let us read): the informer keeps what it had, which may be
	// old. Said on the page rather than shown as current.
	if h.watchErr != nil && now.Sub(h.watchAt) < staleAfterWatchError {
		v.Warning = fmt.Sprintf("a watch failed at %s (%v): what is shown may be stale", h.watchAt.UTC().Format(time.TimeOnly), h.watchErr)
	}
	v.Checks = gate.Evaluate(e, o)
	adoption := gate.AdoptionOf(e, o)
	v.Adoption = &adoption
	rep := gate.Report{Checks: v.Checks}
	v.Verdict = rep.Verdict()
	v.Gate = gateSummary(w.d.clusterStatus(w.name), v.Checks)
	v.Rollout = rolloutView(e, o, l.timelines.of(e.Rollout), now)
	l.explain.explain(ctx, f, rev, gen, v)
	w.publish(v)
	return v.Rollout.WindowChange
}

// informers are one connection's cache and the kinds whose informers wake
// the rebuild loop. Only the rebuild loop touches them; a new connection
// (a new cache) starts with none subscribed.
type informers struct {
	c          cache.Cache
	subscribed map[string]bool
}

// subscribe has the informers of the kinds the gate reads for e
// (gate.Reads) call wake on a change, once each; a kind the cluster lacks
// (no GPU Operator CRDs yet) is tried again on the next rebuild.
func (in *informers) subscribe(ctx context.Context, e gate.Expected, wake func()) {
	for _, k := range gate.Reads(e) {
		kind, obj := k.GVK.Kind, k.Object()
		if in.subscribed[kind] {
			continue
		}
		inf, err := in.c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			continue
		}
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { wake() },
			DeleteFunc: func(any) { wake() },
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					wake()
				}
			},
		}
		if _, err := inf.AddEventHandler(h); err == nil {
			in.subscribed[kind] = true
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
