package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// World is the simulated cluster: nodes as the API server holds them, plus
// what the simulator alone knows (each node's fate, who holds its cordon).
// It may hold several DriverRollouts at once (see Create and Delete), which
// all plan from it, as one controller does for every rollout of a cluster.
// Scripted events change it through its methods.
type World struct {
	// rollouts are every rollout ever created, in creation order; the
	// first is Config.Rollout, the one a Result describes.
	rollouts []*simRollout
	rollout  *v1alpha1.DriverRollout // rollouts[0].ro
	// nodes are the truth: each node's owner and the progress its owner
	// recorded on it, in name order. A rollout plans from its view of
	// them (viewFor).
	nodes []planner.Node
	index map[string]int
	fates []fate
	// started marks the nodes a rollout started (moved out of Pending).
	started []bool
	// gen counts a node's driver changes, so that the effects of an
	// install overtaken by a rollback or an abort are dropped.
	gen []int
	// version is each node's resourceVersion: it changes on every write to
	// the node, and a rollout's write carries the version its pass read
	// as a precondition.
	version []int
	// holder says who holds each node's cordon: "admin", the name of the
	// rollout that cordoned it, or "" when it is schedulable. The planner
	// only sees Unschedulable and the marks; the checker judges with this.
	holder []string
	// ownView names the rollout planView found the world's own nodes to be
	// a view for while it was the only one (see planView).
	ownView string

	now   time.Time
	queue eventQueue
	seq   int
	rng   *rand.Rand
	prof  Profile
	lines []Line
	rec   bool
	// observe is the Observe hook (see hooks); nil in a rehearsal.
	observe func(Step)
	// op plays the GPU Operator's upgrade controller when the first
	// rollout has the gpu-operator actuator (operator.go); nil otherwise.
	op *operatorModel
	// net plays the Network Operator's OFED upgrade controller when the
	// first rollout moves OFED too (ofed.go); nil otherwise.
	net *networkModel
	// drains counts each node's drains, whoever drained it.
	drains []int
	// work are the jobs of Config.Workload on the nodes (jobs.go); nil
	// without a workload.
	work *jobs
}

// simRollout is one rollout of the world.
type simRollout struct {
	ro *v1alpha1.DriverRollout
	// gone: deleted. Deleted with its finalizer, its nodes were released;
	// deleted by force (the finalizer removed by hand), they still name it.
	gone bool
	soak time.Duration
}

// newWorld builds the world of cfg: its first rollout, its nodes in name
// order, and each node's fate and noise, drawn from cfg.Seed.
func newWorld(cfg Config, observe func(Step)) *World {
	first := cfg.Rollout.DeepCopy()
	if first.CreationTimestamp.IsZero() {
		first.CreationTimestamp = metav1.NewTime(cfg.Start)
	}
	w := &World{
		rollouts: []*simRollout{{ro: first, soak: planner.SettingsFor(&first.Spec, len(cfg.Nodes)).Soak}},
		rollout:  first,
		nodes:    slices.Clone(cfg.Nodes),
		now:      cfg.Start,
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		prof:     cfg.Profile,
		rec:      cfg.Record,
		observe:  observe,
	}
	slices.SortFunc(w.nodes, func(a, b planner.Node) int { return strings.Compare(a.Name, b.Name) })
	w.index = make(map[string]int, len(w.nodes))
	w.fates = make([]fate, len(w.nodes))
	w.started = make([]bool, len(w.nodes))
	w.gen = make([]int, len(w.nodes))
	w.version = make([]int, len(w.nodes))
	w.holder = make([]string, len(w.nodes))
	w.drains = make([]int, len(w.nodes))
	p := cfg.Profile
	for i := range w.nodes {
		w.index[w.nodes[i].Name] = i
		if n := &w.nodes[i]; n.Unschedulable {
			// A node that starts cordoned: an admin's, unless it starts
			// in a phase where its rollout holds the cordon.
			w.holder[i] = "admin"
			if n.Owner != "" && n.Phase.HoldsCordon() && !n.AdminCordoned {
				w.holder[i] = n.Owner
			}
		}
		// Draw every number of a node in a fixed order, so a node's fate
		// does not depend on what happened to the others.
		f := fate{
			drain: p.Drain.Draw(w.rng), install: p.Install.Draw(w.rng),
			report: p.Report.Draw(w.rng), rollback: p.Rollback.Draw(w.rng),
			installFails:  w.rng.Float64() < p.InstallFailRate,
			wrongVersion:  w.rng.Float64() < p.WrongVersionRate,
			rollbackFails: w.rng.Float64() < p.RollbackFailRate,
			xidAt:         -1,
		}
		if x := w.rng.Float64(); x < p.XIDRate {
			f.xidAt = w.rng.Float64()
		}
		w.fates[i] = f
		w.scheduleNoise(i)
	}
	w.op = newOperatorModel(w)
	w.net = newNetworkModel(w, cfg.Seed)
	if cfg.Workload != nil {
		// After the fates: the jobs draw from streams of their own.
		w.work = newJobs(w, cfg.Workload, cfg.Seed)
	}
	return w
}

// scheduleNoise plans the node's random NotReady spell and admin cordon.
func (w *World) scheduleNoise(i int) {
	p := w.prof
	name := w.nodes[i].Name
	if p.NotReadyRate > 0 && w.rng.Float64() < p.NotReadyRate {
		at := time.Duration(w.rng.Float64() * float64(p.NotReadyWithin))
		spell := p.NotReadyFor.Draw(w.rng)
		w.after(at, func() {
			w.SetReady(name, false)
			w.after(spell, func() { w.SetReady(name, true) })
		})
	}
	if p.AdminCordonRate > 0 && w.rng.Float64() < p.AdminCordonRate {
		at := time.Duration(w.rng.Float64() * float64(p.AdminCordonWithin))
		hold := p.AdminCordonFor.Draw(w.rng)
		w.after(at, func() {
			if w.AdminCordon(name) {
				w.after(hold, func() { w.AdminUncordon(name) })
			}
		})
	}
}

// Rollout returns the first rollout, for scripted events that edit its spec.
func (w *World) Rollout() *v1alpha1.DriverRollout { return w.rollout }

// RolloutNamed returns the live rollout called name, or nil.
func (w *World) RolloutNamed(name string) *v1alpha1.DriverRollout {
	if r := w.find(name); r != nil && !r.gone {
		return r.ro
	}
	return nil
}

func (w *World) find(name string) *simRollout {
	for _, r := range w.rollouts {
		if r.ro.Name == name {
			return r
		}
	}
	return nil
}

// live reports whether a rollout called name exists.
func (w *World) live(name string) bool {
	r := w.find(name)
	return r != nil && !r.gone
}

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

// Create adds a rollout to the world now, as kubectl apply or Flux would. A
// name already used is ignored.
func (w *World) Create(ro *v1alpha1.DriverRollout) {
	if w.find(ro.Name) != nil {
		return
	}
	ro = ro.DeepCopy()
	ro.CreationTimestamp = metav1.NewTime(w.now)
	w.rollouts = append(w.rollouts, &simRollout{ro: ro, soak: planner.SettingsFor(&ro.Spec, 0).Soak})
	w.note("world", "rollout %s created", ro.Name)
}

// Delete deletes a rollout the way the API server and the controller's
// finalizer do: every node that belongs to it is released (planner.Release),
// then it is gone. Observe, when set, sees the release as a step.
func (w *World) Delete(name string) {
	r := w.find(name)
	if r == nil || r.gone {
		return
	}
	released := []string{}
	before, nodes := w.cordons(), slices.Clone(w.nodes)
	for i := range w.nodes {
		if n := &w.nodes[i]; n.Owner == name {
			planner.Release(n)
			w.bump(i)
			released = append(released, n.Name)
		}
	}
	r.gone = true
	w.note("world", "rollout %s deleted: %d nodes released", name, len(released))
	if w.observe != nil {
		w.observe(Step{At: w.now, Rollout: r.ro.DeepCopy(), Released: released, CordonsBefore: before, CordonsAfter: w.cordons(), Before: nodes, After: slices.Clone(w.nodes)})
	}
}

// ForceDelete deletes a rollout whose finalizer someone removed by hand:
// its nodes still name it, and the other rollouts, finding it gone, may
// take them.
func (w *World) ForceDelete(name string) {
	r := w.find(name)
	if r == nil || r.gone {
		return
	}
	r.gone = true
	w.note("world", "rollout %s deleted without its finalizer", name)
}

// cordons returns who holds each cordoned node's cordon.
func (w *World) cordons() map[string]string {
	out := map[string]string{}
	for i := range w.nodes {
		if w.nodes[i].Unschedulable {
			out[w.nodes[i].Name] = w.holder[i]
		}
	}
	return out
}

// viewFor is the nodes as rollout r's controller observes them: the owner
// as the label says, unless that rollout is gone (the controller checks
// with the API server and releases such a node before planning); progress
// only on the nodes that belong to r.
func (w *World) viewFor(r string) []planner.Node {
	view := slices.Clone(w.nodes)
	for i := range view {
		n := &view[i]
		if n.Owner != "" && n.Owner != r && !w.live(n.Owner) {
			n.Owner = ""
		}
		if n.Owner != r {
			n.Phase, n.Since, n.Failed = "", time.Time{}, false
		}
	}
	return view
}

// planView is viewFor for a pass that plans and writes before anything
// else changes: the world's own nodes when viewFor would change none of
// them (one rollout, or nodes that are all its own or nobody's), else
// viewFor's copy. The planner only reads its snapshot.
func (w *World) planView(r string) []planner.Node {
	if w.ownView == r && len(w.rollouts) == 1 {
		// Checked before, and with one rollout ever only its own writes
		// (Transition.ApplyTo, which makes a node its own) change a node's
		// owner or progress: still true.
		return w.nodes
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		if n.Owner != r && (n.Owner != "" || n.Phase != "" || !n.Since.IsZero() || n.Failed) {
			return w.viewFor(r)
		}
	}
	if len(w.rollouts) == 1 {
		w.ownView = r
	}
	return w.nodes
}

// peersOf are the live rollouts other than r, for r's snapshot.
func (w *World) peersOf(r string) []planner.Peer {
	var out []planner.Peer
	for _, o := range w.rollouts {
		if o.gone || o.ro.Name == r {
			continue
		}
		out = append(out, planner.Peer{Name: o.ro.Name, Created: o.ro.CreationTimestamp.Time, NodeSelector: o.ro.Spec.NodeSelector})
	}
	return out
}

// busy reports whether the owner of node i works on it now (holds its own
// cordon on it), so that an admin leaves it alone.
func (w *World) busy(i int) bool {
	n := &w.nodes[i]
	return n.Owner != "" && w.live(n.Owner) && n.Phase.HoldsCordon()
}

// bump records a write to node i: its resourceVersion moves, and the
// operator model (which keeps what it found of each node between events)
// looks at it again.
func (w *World) bump(i int) {
	w.version[i]++
	if w.op != nil {
		w.op.changed = append(w.op.changed, i)
	}
	if w.net != nil {
		w.net.changed = append(w.net.changed, i)
	}
}

// AdminCordon cordons a node as an admin would. A node a rollout is working
// on is left alone: the rollout holds its cordon already.
func (w *World) AdminCordon(name string) bool {
	i, ok := w.index[name]
	if !ok || w.busy(i) || w.nodes[i].Unschedulable {
		return false
	}
	w.nodes[i].Unschedulable = true
	w.holder[i] = "admin"
	w.bump(i)
	w.note("world", "%s cordoned by an admin", name)
	return true
}

// AdminUncordon lifts an admin's cordon from a node no rollout is working on.
func (w *World) AdminUncordon(name string) bool {
	i, ok := w.index[name]
	if !ok || w.holder[i] != "admin" || w.busy(i) {
		return false
	}
	w.nodes[i].Unschedulable = false
	w.holder[i] = ""
	w.bump(i)
	w.note("world", "%s uncordoned by an admin", name)
	return true
}

// Join makes node name present in the cluster as a node that just
// registered: labels as a provisioner gives them (no driver label: see
// planner's join), no owner or progress, Ready, running driver (""
// when none is installed yet, as on a new node; a version when the node
// comes from a fleet that never had gpufleet's label). The node must exist
// in the world (Config.Nodes holds every node that ever takes part, those
// not present yet with no labels, which no rollout selects): indexes stay
// fixed, so what is scheduled for other nodes stays theirs.
func (w *World) Join(name string, labels map[string]string, driver string) {
	i, ok := w.index[name]
	if !ok {
		return
	}
	n := &w.nodes[i]
	w.gen[i]++ // whatever was under way on an earlier life of the node is over
	n.Labels = maps.Clone(labels)
	delete(n.Labels, v1alpha1.LabelDriver)
	n.Owner, n.Phase, n.Since, n.Failed, n.AdminCordoned = "", "", time.Time{}, false, false
	n.Drained, n.DriverFailed, n.Signals = false, false, nil
	n.DriverVersion, n.DriverReady = driver, driver != ""
	n.Ready = true
	w.driverStarts(i)
	w.ofedJoin(i)
	if w.holder[i] != "admin" {
		// A new Node object: no rollout's cordon survives it (an admin
		// may register a node cordoned, which stays).
		n.Unschedulable, w.holder[i] = false, ""
	}
	w.bump(i)
	w.note("world", "%s joined the cluster (driver %s)", name, cmp.Or(driver, "none"))
}

// Leave takes node name out of the cluster, as deleting its Node does (a
// scale-down, a repair): it loses every label and mark, its cordon and its
// owner, and no rollout selects it any more. Join brings it back as a new
// node.
func (w *World) Leave(name string) {
	i, ok := w.index[name]
	if !ok {
		return
	}
	n := &w.nodes[i]
	w.evictAll(i, false) // its pods go with it, not the rollout's doing
	w.ofedGone(i)
	w.gen[i]++
	n.Labels = map[string]string{}
	n.Owner, n.Phase, n.Since, n.Failed, n.AdminCordoned = "", "", time.Time{}, false, false
	n.Unschedulable, n.Drained, n.DriverReady, n.DriverFailed, n.DriverVersion, n.Signals = false, false, false, false, "", nil
	w.holder[i] = ""
	w.bump(i)
	w.note("world", "%s left the cluster", name)
}

// SetReady flips a node's Ready condition.
func (w *World) SetReady(name string, ready bool) {
	n := w.Node(name)
	if n == nil || n.Ready == ready {
		return
	}
	n.Ready = ready
	w.bump(w.index[name])
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
	maps.Copy(labels, n.Labels)
	if value == "" {
		delete(labels, key)
	} else {
		labels[key] = value
	}
	n.Labels = labels
	w.bump(w.index[name])
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

// actuate performs a transition of rollout r the way the controller and
// the node agent would, and schedules its consequences.
func (w *World) actuate(r *simRollout, t planner.Transition) {
	if w.op != nil && w.op.r == r {
		w.actuateOperator(r, t)
		return
	}
	i := w.index[t.Node]
	n := &w.nodes[i]
	wasCordoned := n.Unschedulable
	t.ApplyTo(n, r.ro.Name, w.now)
	w.bump(i)
	switch {
	case t.Cordon && !wasCordoned:
		w.holder[i] = r.ro.Name
	case t.Uncordon && wasCordoned:
		w.holder[i] = ""
	}
	f := w.fates[i]
	switch {
	case t.To == v1alpha1.NodeDraining:
		n.Drained = false
		w.startDrain(i, r)
	case t.To == v1alpha1.NodeSoaking && f.xidAt >= 0:
		g := w.gen[i]
		w.after(time.Duration(f.xidAt*float64(r.soak)), func() {
			if w.gen[i] == g && w.nodes[i].Phase == v1alpha1.NodeSoaking {
				w.Signal(t.Node, "event", "XidError", "Xid 79: GPU has fallen off the bus")
			}
		})
	}
	// The driver label is what the actuator writes; a node already running
	// the version asked for (a drain that timed out: the label never
	// changed) needs no reinstall.
	// The labels the actuator writes: the driver (flipped, or set as the
	// node settles or joins) and, on a join, the pool. Unchanged labels
	// keep the map the node shares with its pool.
	if t.Driver != "" && n.Labels[v1alpha1.LabelDriver] != t.Driver {
		w.setLabels(i, v1alpha1.LabelDriver, t.Driver)
	}
	if t.Pool != "" && n.Labels[v1alpha1.LabelPool] != t.Pool {
		w.setLabels(i, v1alpha1.LabelPool, t.Pool)
	}
	if t.Driver != "" && (t.Driver != n.DriverVersion || !n.DriverReady) {
		w.flipDriver(i, t.Driver, t.Driver == r.ro.Spec.PreviousVersion)
	}
	w.ofedActuate(i, t)
	if t.Quarantine {
		w.SetLabel(t.Node, v1alpha1.LabelQuarantined, "true")
	}
}

// flipDriver models the driver label changing: the old driver pod leaves,
// the new one installs, and GPU Feature Discovery reports its version.
func (w *World) flipDriver(i int, version string, rollback bool) {
	// A GPU pod still on the node (a Done node rolled back) fails with
	// the driver it ran on.
	w.evictAll(i, true)
	w.gen[i]++
	g := w.gen[i]
	n := &w.nodes[i]
	n.DriverReady, n.DriverFailed, n.DriverVersion, n.DriverStale = false, false, "", false
	w.driverStarts(i)
	f := w.fates[i]
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
		w.nodes[i].DriverReady = w.driverCanBeReady(i)
		reported := version
		if !rollback && f.wrongVersion {
			reported = version + "-mismatch"
		}
		w.after(f.report, func() {
			if w.gen[i] == g {
				w.nodes[i].DriverVersion = reported
				w.bump(i)
			}
		})
	})
}

// event is a scheduled change of the world.
type event struct {
	at  time.Time
	seq int
	fn  func()
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
