//go:build linux

package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// nodeEdges are the moves a node's recorded phase may make; "" is a node
// no rollout touched (or one released).
var nodeEdges = map[v1alpha1.NodePhase][]v1alpha1.NodePhase{
	"":                       {v1alpha1.NodeDraining, v1alpha1.NodeDone},
	v1alpha1.NodeDraining:    {v1alpha1.NodeInstalling, v1alpha1.NodeRollingBack},
	v1alpha1.NodeInstalling:  {v1alpha1.NodeValidating, v1alpha1.NodeRollingBack},
	v1alpha1.NodeValidating:  {v1alpha1.NodeSoaking, v1alpha1.NodeRollingBack},
	v1alpha1.NodeSoaking:     {v1alpha1.NodeDone, v1alpha1.NodeRollingBack},
	v1alpha1.NodeDone:        {v1alpha1.NodeRollingBack},
	v1alpha1.NodeRollingBack: {v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined},
}

// reachable reports whether phase to can follow phase from after any
// number of moves: a sampler may miss the phases in between.
func reachable(from, to v1alpha1.NodePhase) bool {
	seen := map[v1alpha1.NodePhase]bool{}
	next := []v1alpha1.NodePhase{from}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		for _, q := range nodeEdges[p] {
			if q == to {
				return true
			}
			if !seen[q] {
				seen[q] = true
				next = append(next, q)
			}
		}
	}
	return false
}

// invariantWatch checks a rollout's safety rules from outside, the way an
// operator would see the cluster: it samples every node (and the rollout)
// every period with a List, and it watches the nodes, so that every phase
// a node records is seen even when it lasts a millisecond. Violations
// lists what broke.
//
// maxUnavailable binds the controller, not the world: nodes may go
// NotReady together (the node lifecycle controller marks them when their
// kubelets could not renew their leases while the API server was away),
// and then more than maxUnavailable are out through no start of the
// rollout's. So the rule is checked where the controller acts, at each
// start, on the watch's ordered view of every node: a node entering
// Draining while more than maxUnavailable (itself included) are out is a
// violation. A node that went out less than [outGrace] before the start
// is not counted: the controller decided on a cache that could not yet
// hold it. The failure budget is the same: nodes in flight may fail
// together past it (an API server away longer than their timeouts), but
// no node may start once it is spent.
type invariantWatch struct {
	c       client.WithWatch
	rollout string
	sel     labels.Selector
	oos     labels.Selector
	maxU    int
	budget  int
	slots   int      // parallelNodes
	admins  []string // nodes an admin cordoned before the rollout

	mu         sync.Mutex
	violations []string
	phases     map[string][]v1alpha1.NodePhase // every recorded phase, from the watch
	drains     map[string]int                  // entries into Draining, from the watch
	approvedAt time.Time                       // when the test set spec.approval; zero before
	canary     []string
	samples    int
	maxGap     time.Duration
	slow       int // gaps between samples over 250 ms
	maxOut     int // the most selected nodes seen out at once, for any reason
	startOut   int // the most out at a start, the started node included
	// notReadyAtStart is the most NotReady nodes not in flight counted
	// at a start.
	notReadyAtStart int
	pause           bool      // the API server is down on purpose: gaps do not count
	resumeAt        time.Time // nor while it warms up after its restart

	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newInvariantWatch(c client.WithWatch, ro *v1alpha1.DriverRollout, admins []string) (*invariantWatch, error) {
	sel, err := metav1.LabelSelectorAsSelector(&ro.Spec.NodeSelector)
	if err != nil {
		return nil, err
	}
	oos := labels.Nothing()
	if len(ro.Spec.OutOfService) > 0 {
		if oos, err = metav1.LabelSelectorAsSelector(&ro.Spec.OutOfService[0]); err != nil {
			return nil, err
		}
	}
	return &invariantWatch{
		c: c, rollout: ro.Name, sel: sel, oos: oos,
		maxU: planner.MaxUnavailable(ro.Spec.MaxUnavailable, 0), budget: int(ro.Spec.FailureBudget),
		slots:  int(max(ro.Spec.ParallelNodes, 1)),
		admins: admins, phases: map[string][]v1alpha1.NodePhase{}, drains: map[string]int{},
	}, nil
}

func (w *invariantWatch) fail(format string, args ...any) {
	w.violations = append(w.violations, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// Violations returns what broke so far.
func (w *invariantWatch) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// approved records that spec.approval was set now: from then on nodes
// outside the canary may start.
func (w *invariantWatch) approved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.approvedAt = time.Now()
}

// apiDown says the API server is being restarted (on) or back (off).
func (w *invariantWatch) apiDown(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pause = on
	if !on {
		w.resumeAt = time.Now().Add(3 * time.Second)
	}
}

// start samples every period and watches until stop.
func (w *invariantWatch) start(period time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done.Add(2)
	go func() {
		defer w.done.Done()
		last := time.Now()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for ctx.Err() == nil {
			if w.sample(ctx) {
				w.mu.Lock()
				if gap := time.Since(last); !w.pause && time.Now().After(w.resumeAt) {
					w.maxGap = max(w.maxGap, gap)
					if gap > 250*time.Millisecond {
						w.slow++
					}
				}
				w.mu.Unlock()
				last = time.Now()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	go func() {
		defer w.done.Done()
		w.watch(ctx)
	}()
}

func (w *invariantWatch) stop() {
	if w.cancel != nil {
		w.cancel()
		w.done.Wait()
	}
}

// sample reads every node and the rollout once and checks the rules that
// hold at every instant. It reports whether the reads succeeded.
func (w *invariantWatch) sample(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := w.c.List(rctx, &nodes); err != nil {
		return false
	}
	ro := &v1alpha1.DriverRollout{}
	if err := w.c.Get(rctx, client.ObjectKey{Name: w.rollout}, ro); err != nil {
		ro = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if ro != nil && len(ro.Status.Canary.Nodes) > 0 {
		w.canary = ro.Status.Canary.Nodes
	}
	out, flying, failed := 0, 0, 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		set := labels.Set(n.Labels)
		if !w.sel.Matches(set) {
			continue
		}
		owner, phase := n.Labels[v1alpha1.LabelRollout], v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
		if owner != "" && owner != w.rollout {
			w.fail("node %s names rollout %q", n.Name, owner)
		}
		if phase != "" && nodeEdges[phase] == nil && phase != v1alpha1.NodeRolledBack && phase != v1alpha1.NodeQuarantined {
			w.fail("node %s in phase %q, outside the state graph", n.Name, phase)
		}
		if w.out(n) {
			out++
		}
		if phase.InFlight() {
			flying++
		}
		if n.Annotations[v1alpha1.AnnotationFailed] == "true" {
			failed++
		}
		if phase != "" && w.approvedAt.IsZero() && len(w.canary) > 0 && !slices.Contains(w.canary, n.Name) {
			w.fail("node %s in phase %s before the approval (canary %v)", n.Name, phase, w.canary)
		}
		if slices.Contains(w.admins, n.Name) {
			if !n.Spec.Unschedulable {
				w.fail("node %s, cordoned by an admin, is schedulable", n.Name)
			}
			if phase != "" && n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
				w.fail("node %s, cordoned by an admin, is %s without the admin-cordon mark", n.Name, phase)
			}
		}
	}
	w.maxOut = max(w.maxOut, out)
	if flying > w.slots {
		w.fail("%d selected nodes in flight, parallelNodes %d", flying, w.slots)
	}
	// Nothing starts past the budget, so only the nodes in flight when
	// it was spent can fail beyond it.
	if failed > w.budget+w.slots {
		w.fail("%d nodes failed: more than the failure budget %d plus parallelNodes %d", failed, w.budget, w.slots)
	}
	return true
}

// out reports whether a selected node counts against maxUnavailable, for
// any reason: the planner's own rule, read from outside.
func (w *invariantWatch) out(n *corev1.Node) bool {
	phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
	return phase.InFlight() || phase == v1alpha1.NodeQuarantined || n.Spec.Unschedulable || !planner.NodeReady(n) || w.oos.Matches(labels.Set(n.Labels))
}

// outGrace is how long before a start a node may have gone out unseen by
// the controller: its informer's lag, generously.
const outGrace = time.Second

// watched is the watch's last view of a selected node.
type watched struct {
	phase    v1alpha1.NodePhase
	out      bool
	ready    bool
	failed   bool
	outSince time.Time // when the watch saw it go out
}

// watch records every phase change of every node, re-watching from the
// last version it saw when the stream breaks (an API server restart), or
// from a fresh list when that version is gone. At each start it checks
// maxUnavailable on its view of every node.
func (w *invariantWatch) watch(ctx context.Context) {
	rv := ""
	view := map[string]*watched{}
	for ctx.Err() == nil {
		opts := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}
		wi, err := w.c.Watch(ctx, &corev1.NodeList{}, opts)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				rv = "" // the version is too old: list again
				continue
			}
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			rv = n.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			if ev.Type == watch.Deleted || !w.sel.Matches(labels.Set(n.Labels)) {
				delete(view, n.Name)
				continue
			}
			phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
			v, seen := view[n.Name]
			if !seen {
				v = &watched{}
				view[n.Name] = v
			}
			prev := v.phase
			v.failed = n.Annotations[v1alpha1.AnnotationFailed] == "true"
			v.ready = planner.NodeReady(n)
			if out := w.out(n); out != v.out {
				v.out, v.outSince = out, time.Now()
			}
			if seen && prev == phase {
				continue
			}
			v.phase = phase
			w.mu.Lock()
			if seen && phase == v1alpha1.NodeDraining && !prev.InFlight() {
				w.checkStart(n.Name, view)
			}
			w.phases[n.Name] = append(w.phases[n.Name], phase)
			if phase == v1alpha1.NodeDraining {
				w.drains[n.Name]++
				if w.drains[n.Name] > 1 {
					w.fail("node %s drained a second time: %v", n.Name, w.phases[n.Name])
				}
			}
			if seen && !reachable(prev, phase) && phase != "" {
				w.fail("node %s moved %q → %q, outside the state graph: %v", n.Name, prev, phase, w.phases[n.Name])
			}
			w.mu.Unlock()
		}
		wi.Stop()
	}
}

// checkStart checks maxUnavailable and the failure budget at the start
// of node name; w.mu is held.
func (w *invariantWatch) checkStart(name string, view map[string]*watched) {
	out, failed, notReady := 0, 0, 0
	var why []string // the nodes counted out, for the message
	for other, v := range view {
		if v.failed {
			failed++
		}
		if !v.out || (other != name && !v.phase.InFlight() && time.Since(v.outSince) <= outGrace) {
			continue
		}
		out++
		if !v.ready && !v.phase.InFlight() {
			notReady++
		}
		why = append(why, fmt.Sprintf("%s(%s, out %s)", other, cmp.Or(string(v.phase), "-"), time.Since(v.outSince).Round(time.Millisecond)))
	}
	w.startOut = max(w.startOut, out)
	w.notReadyAtStart = max(w.notReadyAtStart, notReady)
	if failed > w.budget {
		w.fail("started %s with %d nodes failed, failure budget %d", name, failed, w.budget)
	}
	if out > w.maxU {
		slices.Sort(why)
		w.fail("started %s with %d selected nodes unavailable, maxUnavailable %d: %v", name, out, w.maxU, why)
	}
}
