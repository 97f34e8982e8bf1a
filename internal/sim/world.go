package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// fate is what will happen to one node, drawn once before the run so that
// two schedulers compared on the same seed face identical nodes.
type fate struct {
	drain, install, report, rollback time.Duration
	installFails, wrongVersion       bool
	rollbackFails                    bool
	// xidAt is where in its soak the node raises an XID, as a fraction of
	// the soak; negative for none.
	xidAt float64
}

// World is the simulated cluster: nodes as the controller would observe
// them, plus what the simulator alone knows (each node's fate, who cordoned
// it). Scripted events change it through its methods.
type World struct {
	rollout *v1alpha1.DriverRollout
	nodes   []planner.Node // the planner's view, in name order
	index   map[string]int
	fates   []fate
	// gen counts a node's driver changes, so that the effects of an
	// install overtaken by a rollback or an abort are dropped.
	gen []int
	// adminHeld: an admin holds a cordon on the node (the simulator knows
	// who cordoned; the planner only sees Unschedulable).
	adminHeld []bool

	now   time.Time
	queue eventQueue
	seq   int
	rng   *rand.Rand
	prof  Profile
	soak  time.Duration
	lines []Line
	rec   bool
}

// Rollout returns the rollout, for scripted events that edit its spec.
func (w *World) Rollout() *v1alpha1.DriverRollout { return w.rollout }

// Now is the simulated time.
func (w *World) Now() time.Time { return w.now }

// Node returns the node called name, or nil.
func (w *World) Node(name string) *planner.Node {
	i, ok := w.index[name]
	if !ok {
		return nil
	}
	return &w.nodes[i]
}

// AdminCordon cordons a node as an admin would. A node the rollout is
// working on is left alone: the rollout holds its cordon already.
func (w *World) AdminCordon(name string) bool {
	n := w.Node(name)
	if n == nil || n.Phase != "" && n.Phase != v1alpha1.NodePending || n.Unschedulable {
		return false
	}
	n.Unschedulable = true
	w.adminHeld[w.index[name]] = true
	w.note("world", "%s cordoned by an admin", name)
	return true
}

// AdminUncordon lifts an admin's cordon from a node the rollout has not
// touched.
func (w *World) AdminUncordon(name string) bool {
	i, ok := w.index[name]
	if !ok || !w.adminHeld[i] || w.nodes[i].Phase != "" && w.nodes[i].Phase != v1alpha1.NodePending {
		return false
	}
	w.nodes[i].Unschedulable = false
	w.adminHeld[i] = false
	w.note("world", "%s uncordoned by an admin", name)
	return true
}

// SetReady flips a node's Ready condition.
func (w *World) SetReady(name string, ready bool) {
	n := w.Node(name)
	if n == nil || n.Ready == ready {
		return
	}
	n.Ready = ready
	if ready {
		w.note("world", "%s is Ready again", name)
	} else {
		w.note("world", "%s went NotReady", name)
	}
}

// Signal records a health signal on a node now.
func (w *World) Signal(name, source, reason, message string) {
	n := w.Node(name)
	if n == nil {
		return
	}
	n.Signals = append(n.Signals, planner.Signal{At: w.now, Source: source, Reason: reason, Message: message})
	w.note("world", "%s: %s %s (%s)", name, source, reason, message)
}

// SetLabel sets a label on a node, e.g. a remediation mark.
func (w *World) SetLabel(name, key, value string) {
	n := w.Node(name)
	if n == nil {
		return
	}
	labels := make(map[string]string, len(n.Labels)+1)
	for k, v := range n.Labels {
		labels[k] = v
	}
	if value == "" {
		delete(labels, key)
	} else {
		labels[key] = value
	}
	n.Labels = labels
	w.note("world", "%s labelled %s=%q", name, key, value)
}

func (w *World) note(who, format string, args ...any) {
	if w.rec {
		w.lines = append(w.lines, Line{At: w.now, Who: who, Text: fmt.Sprintf(format, args...)})
	}
}

// after schedules fn at now+d.
func (w *World) after(d time.Duration, fn func()) {
	w.seq++
	heap.Push(&w.queue, event{at: w.now.Add(d), seq: w.seq, fn: fn})
}

// actuate performs a transition the way the controller and the node agent
// would, and schedules its consequences.
func (w *World) actuate(t planner.Transition) {
	i := w.index[t.Node]
	n := &w.nodes[i]
	t.ApplyTo(n, w.now)
	f := w.fates[i]
	switch {
	case t.To == v1alpha1.NodeDraining:
		n.Drained = false
		g := w.gen[i]
		w.after(f.drain, func() {
			if w.gen[i] == g && w.nodes[i].Phase == v1alpha1.NodeDraining {
				w.nodes[i].Drained = true
			}
		})
	case t.To == v1alpha1.NodeSoaking && f.xidAt >= 0:
		g := w.gen[i]
		w.after(time.Duration(f.xidAt*float64(w.soak)), func() {
			if w.gen[i] == g && w.nodes[i].Phase == v1alpha1.NodeSoaking {
				w.Signal(t.Node, "event", "XidError", "Xid 79: GPU has fallen off the bus")
			}
		})
	}
	// A node already running the version asked for (a drain that timed out:
	// the label never changed) needs no reinstall.
	if t.Driver != "" && (t.Driver != n.DriverVersion || !n.DriverReady) {
		w.flipDriver(i, t.Driver)
	}
	if t.Quarantine {
		w.SetLabel(t.Node, "gpufleet.io/quarantined", "true")
	}
}

// flipDriver models the driver label changing: the old driver pod leaves,
// the new one installs, and GPU Feature Discovery reports its version.
func (w *World) flipDriver(i int, version string) {
	w.gen[i]++
	g := w.gen[i]
	n := &w.nodes[i]
	n.DriverReady, n.DriverFailed, n.DriverVersion = false, false, ""
	f := w.fates[i]
	rollback := version == w.rollout.Spec.PreviousVersion
	install, fails := f.install, f.installFails
	if rollback {
		install, fails = f.rollback, f.rollbackFails
	}
	w.after(install, func() {
		if w.gen[i] != g {
			return
		}
		if fails {
			w.nodes[i].DriverFailed = true
			return
		}
		w.nodes[i].DriverReady = true
		reported := version
		if !rollback && f.wrongVersion {
			reported = version + "-mismatch"
		}
		w.after(f.report, func() {
			if w.gen[i] == g {
				w.nodes[i].DriverVersion = reported
			}
		})
	})
}

// event is a scheduled change of the world.
type event struct {
	at     time.Time
	seq    int
	script bool
	fn     func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
