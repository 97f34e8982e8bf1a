//go:build linux

package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
// a node records is seen even when it lasts a millisecond. It fails on the
// first sample that breaks a rule; Violations lists what broke.
type invariantWatch struct {
	c       client.WithWatch
	rollout string
	sel     labels.Selector
	oos     labels.Selector
	maxU    int
	budget  int
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
	maxOut     int
	pause      bool      // the API server is down on purpose: gaps do not count
	resumeAt   time.Time // nor while it warms up after its restart

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
	out, failed := 0, 0
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
		if phase.InFlight() || phase == v1alpha1.NodeQuarantined || n.Spec.Unschedulable || !planner.NodeReady(n) || w.oos.Matches(set) {
			out++
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
	if out > w.maxU {
		w.fail("%d selected nodes unavailable, maxUnavailable %d", out, w.maxU)
	}
	if failed > w.budget {
		w.fail("%d nodes failed, failure budget %d", failed, w.budget)
	}
	return true
}

// watch records every phase change of every node, re-watching from the
// last version it saw when the stream breaks (an API server restart).
func (w *invariantWatch) watch(ctx context.Context) {
	rv := ""
	last := map[string]v1alpha1.NodePhase{}
	for ctx.Err() == nil {
		opts := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}
		wi, err := w.c.Watch(ctx, &corev1.NodeList{}, opts)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			rv = n.ResourceVersion
			if !w.sel.Matches(labels.Set(n.Labels)) {
				continue
			}
			phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
			prev, seen := last[n.Name]
			if seen && prev == phase {
				continue
			}
			last[n.Name] = phase
			w.mu.Lock()
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
