package sim

import (
	"container/heap"
	"errors"
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

// PlanFunc is the planner the simulator drives; planner.Plan unless a test
// swaps in a broken one to prove the invariant checks catch it (see hooks).
type PlanFunc func(planner.Snapshot, time.Time) planner.Result

// Config is one rehearsal: the rollout, the nodes it starts from, the world
// it meets (profile, seed, script) and how the controller acts on it (tick,
// the approval given when asked). It is all `gpufleet simulate` may set. What
// tests change in a run to prove something about it is not here but in
// hooks, which no package outside sim can reach.
type Config struct {
	// Rollout is the DriverRollout to run; Run works on a copy.
	Rollout *v1alpha1.DriverRollout
	// Nodes are the cluster's nodes at the start (see Nodes).
	Nodes []planner.Node
	// Start is when the rollout is created.
	Start time.Time
	// Seed makes the run reproducible.
	Seed    uint64
	Profile Profile
	// Script are scripted events: approvals, pauses, cordons, failures,
	// more rollouts (World.Create), nodes joining and leaving.
	Script []Event
	// Horizon stops a run that has not finished after this long; default
	// 60 days.
	Horizon time.Duration
	// Record keeps the transcript and the timeline.
	Record bool
	// Tick, when set, makes the simulated controller act on whole ticks
	// from Start (an event at 10:05:23 is seen at 10:06 with a 1m tick), as
	// a real controller batches the events of a burst into one reconcile.
	// It cuts the planning passes of large fleets several-fold. Zero plans
	// at every event's exact time.
	Tick time.Duration
	// ApproveWhenAsked plays the person who approves: as soon as the first
	// rollout waits for approval, spec.approval is set to its name (the
	// edit `gpufleet approve` makes), so a rehearsal measures the
	// machinery and not the wait for a person.
	ApproveWhenAsked bool
}

// hooks are what the tests of this package change in a run to prove
// something about the planner, the checker or the scheduling: a broken
// planner the checker must catch, lockstep batches to measure refilling
// against, an observer of every pass, racing controllers, writes without
// their precondition. They are a struct of their own, unexported, that only
// this package's tests reach (RunHooked, in export_test.go), rather than a
// field of Config or an exported second argument: then no package outside
// sim can set one, and the compiler, not a test, proves that `gpufleet
// simulate` runs the real planner, unobserved (so from compacted snapshots
// where they decide the same), one pass per rollout and round, each write
// under its node's resourceVersion. The zero value is a rehearsal's.
type hooks struct {
	// Plan replaces planner.Plan. A swapped-in planner may write to its
	// snapshot, so it always plans from a copy of the nodes.
	Plan PlanFunc
	// Lockstep starts a new batch only once no node is in flight: the
	// baseline that refill-at-once scheduling is measured against.
	Lockstep bool
	// Observe, when set, is called after every planning step with copies
	// of the nodes before and after it (for invariant checks). An observed
	// run plans from every node: an observer needs them all.
	Observe func(Step)
	// Racing plays two controllers that both believe they lead (a leader
	// election hand-over, or two passes on a lagging cache): every live
	// rollout is planned twice per round, all from the same moment's view,
	// and the passes write one after the other. Each write carries the
	// version of the node its pass read, and a node that changed since
	// refuses it, which ends that pass, as a conflict ends the
	// controller's. Without it each rollout plans once per round, in turn,
	// seeing the writes of the ones before. (More rollouts come from
	// World.Create in the Script.)
	Racing bool
	// Unlocked drops that precondition, as a controller patching nodes
	// without their resourceVersion would: only for the tests proving the
	// checker catches two rollouts taking the same node.
	Unlocked bool
}

// Step is one planning pass of one rollout, for Observe; or, with
// Released set, the release of a deleted rollout's nodes.
type Step struct {
	At      time.Time
	Rollout *v1alpha1.DriverRollout
	// Before is the view the pass planned from; After the same rollout's
	// view once its writes were made.
	Before []planner.Node
	After  []planner.Node
	// Result is what the pass decided, its transitions cut to those the
	// world accepted.
	Result planner.Result
	// Others are the other live rollouts, as the pass saw them.
	Others []planner.Peer
	// Truth are the nodes in the world just before the pass wrote, which
	// a racing pass may not have read; nil when unknown.
	Truth []planner.Node
	// CordonsBefore and CordonsAfter say who held each cordoned node's
	// cordon ("admin", or the rollout that cordoned it) before and after
	// the pass; nil when unknown (a single step from a made-up snapshot).
	CordonsBefore, CordonsAfter map[string]string
	// Refused counts the planned writes the world refused: the node had
	// changed since the pass read it.
	Refused int
	// Released are the nodes released because Rollout was deleted; such a
	// step has no Result.
	Released []string
}

// Event is a scripted change of the world at Start+At.
type Event struct {
	At time.Duration
	// What is the transcript line; empty for none.
	What string
	Do   func(*World)
}

// Result is how a simulated rollout went.
type Result struct {
	Start, End time.Time
	// Makespan is End-Start: from creation to the last transition.
	Makespan time.Duration
	Phase    v1alpha1.RolloutPhase
	Status   v1alpha1.DriverRolloutStatus
	// Nodes are the nodes at the end.
	Nodes []planner.Node
	// Steps is how many planning passes ran.
	Steps int
	// Work is, per node, the time the rollout would need for it if it never
	// waited (drain + install + report + soak): the input of LowerBound.
	// Only nodes a rollout started are in it: a node settled on the
	// target, or never reached, did no work.
	Work map[string]time.Duration
	// Transcript and Timeline are kept when Config.Record is set.
	Transcript []Line
	Timeline   []Segment
	// HitHorizon: the run was cut at Config.Horizon.
	HitHorizon bool
	// Phases are the rollout's phases over time, always kept (they change
	// rarely): where windows, approvals and pauses held it.
	Phases []PhaseSpan
	// Rollouts are the rollouts still alive at the end, the first one
	// first when it is, with their last status.
	Rollouts []*v1alpha1.DriverRollout
	// Refused counts the writes refused because a node changed after the
	// pass that planned them read it.
	Refused int
	world   *World
}

// ViewOf returns the nodes at the end as the controller of the live
// rollout called name would observe them.
func (r *Result) ViewOf(name string) []planner.Node { return r.world.viewFor(name) }

// PhaseSpan is the rollout in one phase from From to To.
type PhaseSpan struct {
	Phase    v1alpha1.RolloutPhase
	From, To time.Time
}

// Line is one transcript line.
type Line struct {
	At   time.Time
	Who  string
	Text string
}

// Segment is a node in one phase from From to To.
type Segment struct {
	Node     string
	Phase    v1alpha1.NodePhase
	From, To time.Time
}

// Nodes builds n Ready, schedulable nodes named prefix-NNN carrying labels
// and, as every node gpufleet manages does, the driver label
// (planner.LabelDriver), all reporting driver version. The nodes share one
// label map.
func Nodes(n int, prefix string, labels map[string]string, version string) []planner.Node {
	width := len(fmt.Sprint(max(n, 100) - 1))
	if _, ok := labels[planner.LabelDriver]; !ok {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[planner.LabelDriver] = version
	}
	out := make([]planner.Node, n)
	for i := range out {
		out[i] = planner.Node{
			Name:          fmt.Sprintf("%s-%0*d", prefix, width, i),
			Labels:        labels,
			Ready:         true,
			DriverReady:   true,
			DriverVersion: version,
		}
	}
	return out
}

// Run simulates cfg's rollout until it converges (nothing in flight and
// nothing left that could change it) or reaches its horizon.
func Run(cfg Config) (*Result, error) { return run(cfg, hooks{}) }

// run is Run with the test hooks h.
func run(cfg Config, h hooks) (*Result, error) {
	if cfg.Rollout == nil {
		return nil, errors.New("simulate: no rollout")
	}
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("simulate: no nodes")
	}
	w := newWorld(cfg, h.Observe)
	plan := h.Plan
	if plan == nil {
		plan = planner.Plan
	}
	if h.Lockstep {
		plan = lockstep(plan)
	}
	horizon := cfg.Horizon
	if horizon <= 0 {
		horizon = 60 * 24 * time.Hour
	}
	cal := planner.NewCalendar(&w.rollout.Spec)
	for _, e := range cfg.Script {
		w.seq++
		heap.Push(&w.queue, event{at: cfg.Start.Add(e.At), seq: w.seq, script: true, fn: func() {
			if e.What != "" {
				w.note("script", "%s", e.What)
			}
			if e.Do != nil {
				e.Do(w)
			}
		}})
	}
	// scripts counts the scripted events not run yet: the queue holds every
	// node's next event too, too many to look through at every pass.
	scripts := len(cfg.Script)
	for i := range w.queue {
		if w.queue[i].script {
			fn := w.queue[i].fn
			w.queue[i].fn = func() { scripts--; fn() }
		}
	}
	scripted := func() bool { return scripts > 0 } // a scripted event is still to come

	res := &Result{Start: cfg.Start, End: cfg.Start, Work: map[string]time.Duration{}, world: w}
	tl := newTimeline(cfg.Record, w.nodes, cfg.Start)
	lastPhase, lastMsg := v1alpha1.RolloutPhase(""), ""
	maxSteps := 200*len(w.nodes) + 10000
	for ; res.Steps < maxSteps; res.Steps++ {
		for len(w.queue) > 0 && !w.queue[0].at.After(w.now) {
			heap.Pop(&w.queue).(event).fn()
		}
		// Every live rollout plans once: in turn, or all from the same
		// moment when racing.
		var live []*simRollout
		for _, r := range w.rollouts {
			if !r.gone {
				live = append(live, r)
			}
		}
		if h.Racing {
			live = append(live, live...)
		}
		type read struct {
			view     []planner.Node
			versions []int
			// sparse are the versions read of the nodes the pass writes,
			// when versions is not kept (not racing).
			sparse map[int]int
			others []planner.Peer
			// compact: the view is the world's own nodes, for planner.Plan,
			// and nothing observes it: planner.Compact may leave out the
			// nodes that are only counted.
			compact bool
		}
		reads := make([]read, len(live))
		readAll := func(k int) {
			name := live[k].ro.Name
			if !h.Racing && h.Plan == nil {
				// Planned and written before anything else changes, by
				// planner.Plan, which only reads its snapshot: the world's
				// own nodes serve as the view when it hides nothing from
				// this rollout, and the versions a write must find are read
				// just before the writes (see below). Copying 50,000 nodes
				// at every pass was most of a large simulation's time. A
				// planner a test swaps in may write to its snapshot, so it
				// gets a copy.
				view, own := w.planView(name)
				reads[k] = read{view: view, others: w.peersOf(name), compact: own && h.Observe == nil}
				return
			}
			reads[k] = read{view: w.viewFor(name), versions: slices.Clone(w.version), others: w.peersOf(name)}
		}
		if h.Racing {
			for k := range live {
				readAll(k)
			}
		}
		next := time.Time{}
		resting := true
		var first *planner.Result
		for k, ro := range live {
			if !h.Racing {
				readAll(k)
			}
			rd := reads[k]
			var before []planner.Node
			if h.Observe != nil {
				before = slices.Clone(rd.view)
			}
			var truth []planner.Node
			var cordons map[string]string
			if h.Observe != nil {
				truth, cordons = slices.Clone(w.nodes), w.cordons()
			}
			snap := planner.Snapshot{Rollout: ro.ro, Nodes: rd.view, Others: rd.others}
			if rd.compact {
				// A pass then costs what the nodes in flight cost, not what
				// the pool does: 50,000 nodes, planned every minute. The
				// Compactor looks again only at nodes whose version moved:
				// every change of what it reads (readiness, cordon, labels,
				// marks, progress, reported driver) is a write that bumps it.
				snap = w.compactor.Compact(snap, w.version, w.compactBuf)
				if len(snap.Nodes) < len(rd.view) {
					w.compactBuf = snap.Nodes[:0]
					w.compacted++
				}
			}
			r := plan(snap, w.now)
			if rd.versions == nil {
				// Nothing has written since the read: the versions now are
				// those the pass read.
				rd.sparse = make(map[int]int, len(r.Transitions))
				for _, t := range r.Transitions {
					if i, ok := w.index[t.Node]; ok {
						rd.sparse[i] = w.version[i]
					}
				}
			}
			readVersion := func(i int) int {
				if rd.versions != nil {
					return rd.versions[i]
				}
				return rd.sparse[i]
			}
			applied, refused := r.Transitions[:0:0], 0
			for _, t := range r.Transitions {
				i := w.index[t.Node]
				if !h.Unlocked && w.version[i] != readVersion(i) {
					// A conflict ends the pass; the next one re-plans.
					refused = len(r.Transitions) - len(applied)
					break
				}
				if cfg.Record {
					who := t.Node
					if len(w.rollouts) > 1 {
						who = ro.ro.Name + "/" + t.Node
					}
					w.lines = append(w.lines, Line{At: w.now, Who: who, Text: string(t.From) + " → " + string(t.To) + ": " + t.Reason})
				}
				if t.From == v1alpha1.NodePending && planner.InFlight(t.To) {
					w.started[i] = true // it has work to do (see Result.Work)
				}
				w.actuate(ro, t)
				tl.move(t, w.now)
				applied = append(applied, t)
			}
			r.Transitions = applied
			res.Refused += refused
			if len(applied) > 0 {
				res.End = w.now
			}
			if refused == 0 {
				// A pass that stopped at a conflict writes no status.
				ro.ro.Status = r.Status
			}
			if h.Observe != nil {
				h.Observe(Step{At: w.now, Rollout: ro.ro.DeepCopy(), Before: before, After: w.viewFor(ro.ro.Name), Result: r,
					Others: rd.others, Truth: truth, CordonsBefore: cordons, CordonsAfter: w.cordons(), Refused: refused})
			}
			if refused > 0 {
				// Retry at once, from a fresh read: the status the pass
				// would have written is not there to say the rollout rests.
				next = w.now
				resting = false
			}
			switch ro.ro.Status.Phase {
			case v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithFailures, v1alpha1.PhaseAborted,
				v1alpha1.PhaseStalled, v1alpha1.PhaseWaitingForApproval, v1alpha1.PhasePaused:
				// Finished, or waiting for a person: only a scripted
				// event can move it.
			default:
				resting = false
			}
			if !r.NextCheck.IsZero() && (next.IsZero() || r.NextCheck.Before(next)) {
				next = r.NextCheck
			}
			if ro == w.rollouts[0] && first == nil {
				first = &r
			}
		}
		if first != nil {
			st := w.rollout.Status
			if k := len(res.Phases); k == 0 || res.Phases[k-1].Phase != st.Phase {
				if k > 0 {
					res.Phases[k-1].To = w.now
				}
				res.Phases = append(res.Phases, PhaseSpan{Phase: st.Phase, From: w.now})
			}
			if msg := readyMessage(st); st.Phase != lastPhase || (st.Phase != v1alpha1.PhaseProgressing && msg != lastMsg) {
				w.note("rollout", "%s: %s", st.Phase, msg)
				lastPhase, lastMsg = st.Phase, msg
			}
		}

		if ro := w.rollout; cfg.ApproveWhenAsked && ro.Status.Phase == v1alpha1.PhaseWaitingForApproval && ro.Spec.Approval != ro.Name {
			ro.Spec.Approval = ro.Name
			w.note("script", "approved %s", ro.Name)
			resting, next = false, w.now
		}
		// Counted only once nothing rests on the rollout: a count over
		// every node at every pass was a tenth of a large simulation.
		if resting && !scripted() && inFlight(w.nodes) == 0 {
			return finish(res, w, tl), nil
		}
		if len(w.queue) > 0 && (next.IsZero() || w.queue[0].at.Before(next)) {
			next = w.queue[0].at
		}
		// Land on a window's closing edge so the transcript and the report
		// show it when it happens, not at the next event after it.
		// Only while something else is still to come: a rollout that waits
		// for nothing that can happen is over, window edges or not.
		if first != nil && w.rollout.Status.Nodes.Pending > 0 && !next.IsZero() {
			if c := cal.NextClose(w.now); !c.IsZero() && (next.IsZero() || c.Before(next)) {
				next = c
			}
		}
		if next.IsZero() {
			return finish(res, w, tl), nil
		}
		if next.Sub(cfg.Start) > horizon {
			res.HitHorizon = true
			return finish(res, w, tl), nil
		}
		if cfg.Tick > 0 {
			if off := next.Sub(cfg.Start) % cfg.Tick; off != 0 {
				next = next.Add(cfg.Tick - off)
			}
		}
		if next.After(w.now) {
			w.now = next
		}
	}
	return nil, fmt.Errorf("simulate: no convergence after %d steps at %s", res.Steps, w.now.Format(time.RFC3339))
}

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
	p := cfg.Profile
	for i := range w.nodes {
		w.index[w.nodes[i].Name] = i
		if n := &w.nodes[i]; n.Unschedulable {
			// A node that starts cordoned: an admin's, unless it starts
			// in a phase where its rollout holds the cordon.
			w.holder[i] = "admin"
			if n.Owner != "" && planner.HoldsCordon(n.Phase) && !n.AdminCordoned {
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

func inFlight(nodes []planner.Node) int {
	n := 0
	for i := range nodes {
		if planner.InFlight(nodes[i].Phase) {
			n++
		}
	}
	return n
}

func readyMessage(st v1alpha1.DriverRolloutStatus) string {
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Message
		}
	}
	return ""
}

func finish(res *Result, w *World, tl *timeline) *Result {
	res.Makespan = res.End.Sub(res.Start)
	if k := len(res.Phases); k > 0 {
		last := &res.Phases[k-1]
		last.To = res.End
		if last.To.Before(last.From) {
			last.To = last.From
		}
	}
	res.Phase = w.rollout.Status.Phase
	res.Status = w.rollout.Status
	res.Nodes = w.nodes
	for _, r := range w.rollouts {
		if !r.gone {
			res.Rollouts = append(res.Rollouts, r.ro)
		}
	}
	res.Transcript = w.lines
	res.Timeline = tl.close(res.End)
	soak := w.rollouts[0].soak
	for i, n := range w.nodes {
		if !w.started[i] {
			continue
		}
		f := w.fates[i]
		res.Work[n.Name] = f.drain + f.install + f.report + soak
	}
	return res
}

// lockstep wraps a planner so that new nodes start only when none is in
// flight: classic batches, each waiting for its slowest node.
func lockstep(plan PlanFunc) PlanFunc {
	return func(s planner.Snapshot, now time.Time) planner.Result {
		r := plan(s, now)
		busy := inFlight(s.Nodes)
		for _, t := range r.Transitions {
			if t.From != v1alpha1.NodePending {
				busy += delta(t)
			}
		}
		if busy == 0 {
			return r
		}
		kept := r.Transitions[:0:0]
		for _, t := range r.Transitions {
			if t.From != v1alpha1.NodePending {
				kept = append(kept, t)
			}
		}
		r.Transitions = kept
		return r
	}
}

// delta is how a non-start transition changes the in-flight count.
func delta(t planner.Transition) int {
	switch a, b := planner.InFlight(t.From), planner.InFlight(t.To); {
	case a && !b:
		return -1
	case !a && b:
		return 1
	}
	return 0
}
