package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Run simulates cfg's rollout until it converges (nothing in flight and
// nothing left that could change it) or reaches its horizon.
func Run(cfg Config) (*Result, error) { return run(cfg, hooks{}) }

// run is Run with the test hooks h. A round is the runner's steps in
// order: the world's events that are due happen, every live rollout plans
// once (passes), the first rollout's phase is recorded (notePhase) and
// approved when it asks (approveWhenAsked); then the run ends if it rests,
// or the clock moves to the next moment anything can change (nextWake,
// advance).
func run(cfg Config, h hooks) (*Result, error) {
	if cfg.Rollout == nil {
		return nil, errors.New("simulate: no rollout")
	}
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("simulate: no nodes")
	}
	if cfg.Workload != nil {
		if err := cfg.Workload.check(cfg.Nodes); err != nil {
			return nil, err
		}
	}
	r := newRunner(cfg, h)
	maxSteps := 200*len(r.w.nodes) + 10000
	for ; r.res.Steps < maxSteps; r.res.Steps++ {
		r.fireDue()
		rd := r.passes()
		// The Network Operator reacts to the passes' writes (a released
		// OFED hold) at once, as it watches node labels.
		r.w.networkPass()
		if rd.first {
			r.notePhase()
		}
		r.approveWhenAsked(&rd)
		if r.rests(rd) {
			return r.finish(), nil
		}
		next := r.nextWake(rd)
		if next.IsZero() {
			// Nothing planned, scheduled or scripted is left to come.
			return r.finish(), nil
		}
		if next.Sub(cfg.Start) > r.horizon {
			r.res.HitHorizon = true
			return r.finish(), nil
		}
		r.advance(next)
	}
	return nil, fmt.Errorf("simulate: no convergence after %d steps at %s", r.res.Steps, r.w.now.Format(time.RFC3339))
}

// runner is one run: the world, the test hooks, the result being built and
// what the run carries from round to round. Its methods are a round's
// steps (see run).
type runner struct {
	cfg   Config
	hooks hooks
	w     *World
	// plan is the planner the passes call: planner.Plan or the Plan hook,
	// wrapped by lockstep under the Lockstep hook.
	plan    PlanFunc
	horizon time.Duration
	// cal is the first rollout's calendar, for its windows' closing edges.
	cal planner.Calendar
	res *Result
	tl  *timeline
	// scripts counts the scripted events not run yet: the queue holds every
	// node's next event too, too many to look through at every pass.
	scripts int
	// lastPhase and lastMsg are the first rollout's phase and Ready message
	// as the transcript last told them.
	lastPhase v1alpha1.RolloutPhase
	lastMsg   string
	// live, reads and sparse are a round's passes, what each read and the
	// versions a pass's writes must find, kept from round to round so that
	// a round allocates none of them.
	live   []*simRollout
	reads  []reading
	sparse map[int]int
}

// reading is what one pass read of the world before planning.
type reading struct {
	view []planner.Node
	// versions are every node's resourceVersion as the pass read them,
	// when something may write between its read and its writes (racing
	// passes, or a planner a test swapped in); nil when nothing can, and
	// the versions its writes must find are read just before them (see
	// write).
	versions []int
	others   []planner.Peer
}

// round is what a round's passes found, for the steps after them.
type round struct {
	// next is the earliest moment a pass asked to be planned again (its
	// NextCheck, or now after a refused write); zero for none.
	next time.Time
	// resting: every rollout planned is finished or waits for a person
	// (or none is alive).
	resting bool
	// first: the first rollout is alive and planned in this round.
	first bool
}

// newRunner builds the world of cfg and queues its scripted events.
func newRunner(cfg Config, h hooks) *runner {
	w := newWorld(cfg, h.Observe)
	r := &runner{cfg: cfg, hooks: h, w: w, plan: h.Plan, horizon: cfg.Horizon}
	if r.plan == nil {
		r.plan = planner.Plan
	}
	if h.Lockstep {
		r.plan = lockstep(r.plan)
	}
	if r.horizon <= 0 {
		r.horizon = 60 * 24 * time.Hour
	}
	r.cal = planner.NewCalendar(&w.rollout.Spec)
	for _, e := range cfg.Script {
		w.seq++
		heap.Push(&w.queue, event{at: cfg.Start.Add(e.At), seq: w.seq, fn: func() {
			r.scripts--
			if e.What != "" {
				w.note("script", "%s", e.What)
			}
			if e.Do != nil {
				e.Do(w)
			}
		}})
	}
	r.scripts = len(cfg.Script)
	r.res = &Result{Start: cfg.Start, End: cfg.Start, Work: map[string]time.Duration{}, world: w}
	r.tl = newTimeline(cfg.Record, w.nodes)
	return r
}

// fireDue runs the world's events that are due: scripted ones, and the
// consequences of earlier writes (a drain or an install finishing, a
// version reported, a node's NotReady spell).
func (r *runner) fireDue() {
	w := r.w
	// The jobs first: they play against the nodes as the last round left
	// them.
	w.advanceWorkload()
	for len(w.queue) > 0 && !w.queue[0].at.After(w.now) {
		heap.Pop(&w.queue).(event).fn()
	}
}

// passes plans every live rollout once: in turn, each reading the world
// just before it plans and so seeing the writes of the ones before it; or,
// under the Racing hook, twice over and all from the same moment's read,
// as two controllers that both believe they lead would.
func (r *runner) passes() round {
	w := r.w
	live := r.live[:0]
	for _, ro := range w.rollouts {
		if !ro.gone {
			live = append(live, ro)
		}
	}
	if r.hooks.Racing {
		live = append(live, live...)
	}
	r.live = live
	w.observeWork()
	if cap(r.reads) < len(live) {
		r.reads = make([]reading, len(live))
	}
	reads := r.reads[:len(live)]
	if r.hooks.Racing {
		for k, ro := range live {
			reads[k] = r.read(ro)
		}
	}
	rd := round{resting: true}
	for k, ro := range live {
		if !r.hooks.Racing {
			reads[k] = r.read(ro)
		}
		res, refused := r.pass(ro, &reads[k])
		if refused > 0 {
			// Retry at once, from a fresh read: the status the pass
			// would have written is not there to say the rollout rests.
			rd.next = w.now
			rd.resting = false
		}
		if !waits(ro.ro) {
			rd.resting = false
		}
		if !res.NextCheck.IsZero() && (rd.next.IsZero() || res.NextCheck.Before(rd.next)) {
			rd.next = res.NextCheck
		}
		if ro == w.rollouts[0] {
			rd.first = true
		}
	}
	clear(reads) // the views and versions read are not kept past the round
	return rd
}

// read reads the world as rollout ro's pass does before it plans: its view
// of the nodes, the other live rollouts, and, when something may write
// between this read and the pass's writes, every node's version.
func (r *runner) read(ro *simRollout) reading {
	w, name := r.w, ro.ro.Name
	if !r.hooks.Racing && r.hooks.Plan == nil {
		// Planned and written before anything else changes, by
		// planner.Plan, which only reads its snapshot: the world's own
		// nodes serve as the view when it hides nothing from this
		// rollout, and the versions a write must find are read just
		// before the writes (see write). Copying 50,000 nodes at every
		// pass was most of a large simulation's time. A planner a test
		// swaps in may write to its snapshot, so it gets a copy.
		return reading{view: w.planView(name), others: w.peersOf(name)}
	}
	return reading{view: w.viewFor(name), versions: slices.Clone(w.version), others: w.peersOf(name)}
}

// pass is one planning pass of rollout ro from what it read: plan, write
// what the world accepts (recording each write), write the status unless a
// write was refused, and show the observer. It returns what was planned,
// its transitions cut to those written, and how many writes were refused.
func (r *runner) pass(ro *simRollout, rd *reading) (planner.Result, int) {
	w := r.w
	var seen observed
	if r.hooks.Observe != nil {
		seen = observed{before: slices.Clone(rd.view), truth: slices.Clone(w.nodes), cordons: w.cordons()}
	}
	res := r.plan(planner.Snapshot{Rollout: ro.ro, Nodes: rd.view, Others: rd.others, OFEDPolicy: w.OFEDPolicy()}, w.now)
	refused := r.write(ro, rd, &res)
	r.res.Refused += refused
	if len(res.Transitions) > 0 {
		r.res.End = w.now
	}
	if refused == 0 {
		// A pass that stopped at a conflict writes no status.
		ro.ro.Status = res.Status
	}
	if r.hooks.Observe != nil {
		r.observe(ro, rd, res, refused, seen)
	}
	return res, refused
}

// write performs the pass's transitions in order, each under the
// precondition a controller's patch carries: the node's resourceVersion is
// still the one the pass read. The first node that changed since refuses
// its write and ends the pass, as a conflict ends the controller's (the
// next pass re-plans from a fresh read); the Unlocked hook drops the
// precondition. It cuts res's transitions to those written and returns how
// many were refused.
func (r *runner) write(ro *simRollout, rd *reading, res *planner.Result) int {
	w := r.w
	if rd.versions == nil {
		// Nothing has written since the read: the versions now are those
		// the pass read. Only the nodes it writes are looked up.
		if r.sparse == nil {
			r.sparse = map[int]int{}
		}
		clear(r.sparse)
		for _, t := range res.Transitions {
			if i, ok := w.index[t.Node]; ok {
				r.sparse[i] = w.version[i]
			}
		}
	}
	readVersion := func(i int) int {
		if rd.versions != nil {
			return rd.versions[i]
		}
		return r.sparse[i]
	}
	applied := res.Transitions[:0:0]
	for _, t := range res.Transitions {
		i := w.index[t.Node]
		if !r.hooks.Unlocked && w.version[i] != readVersion(i) {
			refused := len(res.Transitions) - len(applied)
			res.Transitions = applied
			return refused
		}
		r.record(ro, i, t)
		w.actuate(ro, t)
		applied = append(applied, t)
	}
	res.Transitions = applied
	return 0
}

// record records a written transition of rollout ro on node i: its
// transcript line (before what the world does about it), the node's
// timeline, and whether the rollout started work on the node (see
// Result.Work).
func (r *runner) record(ro *simRollout, i int, t planner.Transition) {
	w := r.w
	if r.cfg.Record {
		who := t.Node
		if len(w.rollouts) > 1 {
			who = ro.ro.Name + "/" + t.Node
		}
		w.lines = append(w.lines, Line{At: w.now, Who: who, Text: string(t.From) + " → " + string(t.To) + ": " + t.Reason})
	}
	if t.From == v1alpha1.NodePending && t.To.InFlight() {
		w.started[i] = true
	}
	r.tl.move(t, w.now)
}

// observed is what the Observe hook is shown of the world as it was before
// a pass wrote.
type observed struct {
	before, truth []planner.Node
	cordons       map[string]string
}

// observe shows the Observe hook one pass: the view it planned from, the
// world before and after its writes, and what it decided and wrote.
func (r *runner) observe(ro *simRollout, rd *reading, res planner.Result, refused int, seen observed) {
	w := r.w
	r.hooks.Observe(Step{At: w.now, Rollout: ro.ro.DeepCopy(), Before: seen.before, After: w.viewFor(ro.ro.Name), Result: res,
		Others: rd.others, Truth: seen.truth, CordonsBefore: seen.cordons, CordonsAfter: w.cordons(), Refused: refused, OFEDPods: w.takeOFEDPods()})
}

// waits reports whether rollout ro, as its last pass left it, is finished
// or waits for a person: only a scripted event can move it.
func waits(ro *v1alpha1.DriverRollout) bool {
	switch ro.Status.Phase {
	case v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithFailures, v1alpha1.PhaseAborted,
		v1alpha1.PhaseStalled, v1alpha1.PhaseWaitingForApproval, v1alpha1.PhasePaused:
		return true
	}
	return false
}

// notePhase records the first rollout's phase after a round that planned
// it: a new span in Result.Phases when the phase changed, and a transcript
// line when the phase or, out of Progressing, its Ready message changed
// (Progressing's message counts nodes and changes at every pass).
func (r *runner) notePhase() {
	w, res := r.w, r.res
	st := w.rollout.Status
	if k := len(res.Phases); k == 0 || res.Phases[k-1].Phase != st.Phase {
		if k > 0 {
			res.Phases[k-1].To = w.now
		}
		res.Phases = append(res.Phases, PhaseSpan{Phase: st.Phase, From: w.now})
	}
	if msg := readyMessage(st); st.Phase != r.lastPhase || (st.Phase != v1alpha1.PhaseProgressing && msg != r.lastMsg) {
		w.note("rollout", "%s: %s", st.Phase, msg)
		r.lastPhase, r.lastMsg = st.Phase, msg
	}
}

// approveWhenAsked plays the person who approves (Config.ApproveWhenAsked):
// the first rollout waiting for approval gets it now, and the round does
// not rest, so the next pass, at once, sees it.
func (r *runner) approveWhenAsked(rd *round) {
	ro := r.w.rollout
	if !r.cfg.ApproveWhenAsked || ro.Status.Phase != v1alpha1.PhaseWaitingForApproval || ro.Spec.Approval == ro.Name {
		return
	}
	ro.Spec.Approval = ro.Name
	r.w.note("script", "approved %s", ro.Name)
	rd.resting, rd.next = false, r.w.now
}

// rests reports whether the run is over: every rollout finished or waits
// for a person, no scripted event is left to move one, and no node is in
// flight. The nodes are counted only once the rest holds: a count over
// every node at every pass was a tenth of a large simulation.
func (r *runner) rests(rd round) bool {
	return rd.resting && r.scripts == 0 && inFlight(r.w.nodes) == 0
}

// nextWake is the next moment anything can change: the earliest a pass
// asked for, the world's next event, or the first rollout's window
// closing, whichever is first; zero when nothing is to come.
func (r *runner) nextWake(rd round) time.Time {
	w, next := r.w, rd.next
	if len(w.queue) > 0 && (next.IsZero() || w.queue[0].at.Before(next)) {
		next = w.queue[0].at
	}
	// Land on a window's closing edge so the transcript and the report
	// show it when it happens, not at the next event after it. Only while
	// something else is still to come: a rollout that waits for nothing
	// that can happen is over, window edges or not.
	if rd.first && w.rollout.Status.Nodes.Pending > 0 && !next.IsZero() {
		if c := r.cal.NextClose(w.now); !c.IsZero() && c.Before(next) {
			next = c
		}
	}
	return next
}

// advance moves the clock to next, rounded up to the controller's next
// tick from Start when Config.Tick is set (a real controller batches a
// burst's events into one reconcile). It never moves back: a pass that
// asks for now (a refused write, an approval) runs again at once.
func (r *runner) advance(next time.Time) {
	if t := r.cfg.Tick; t > 0 {
		if off := next.Sub(r.cfg.Start) % t; off != 0 {
			next = next.Add(t - off)
		}
	}
	if next.After(r.w.now) {
		r.w.now = next
	}
}

// finish completes the result: the makespan, the last phase span, the
// nodes and rollouts at the end, the transcript and timeline, and the work
// each node a rollout started needed.
func (r *runner) finish() *Result {
	res, w := r.res, r.w
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
	for _, ro := range w.rollouts {
		if !ro.gone {
			res.Rollouts = append(res.Rollouts, ro.ro)
		}
	}
	if w.work != nil {
		wr := w.work.res
		res.Workload = &wr
	}
	res.Transcript = w.lines
	res.Timeline = r.tl.close(res.End)
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

func inFlight(nodes []planner.Node) int {
	n := 0
	for i := range nodes {
		if nodes[i].Phase.InFlight() {
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
	switch a, b := t.From.InFlight(), t.To.InFlight(); {
	case a && !b:
		return -1
	case !a && b:
		return 1
	}
	return 0
}
