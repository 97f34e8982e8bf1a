package sim

import (
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Report is what a platform lead wants to know of a rehearsed rollout before
// a change window.
type Report struct {
	Nodes   int                   `json:"nodes"`
	Outcome v1alpha1.RolloutPhase `json:"outcome"`
	// Reason is the rollout's Ready message at the end: why it stalled.
	Reason   string    `json:"reason"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Makespan Duration  `json:"makespan"`
	// LowerBound is the shortest rollout the policy allows for the nodes
	// that ended Done: the canary, then the rest, each spread over every
	// slot, nodes starting only while the maintenance windows are open and
	// no freeze holds (see windowedEnd), no wait for approval. Efficiency
	// is LowerBound / Makespan.
	LowerBound  Duration `json:"lowerBound"`
	Efficiency  float64  `json:"efficiency"`
	Done        int      `json:"done"`
	RolledBack  int      `json:"rolledBack"`
	Quarantined int      `json:"quarantined"`
	Untouched   int      `json:"untouched"`
	Failures    int      `json:"failures"`
	Budget      int      `json:"budget"`
	BudgetHeld  bool     `json:"budgetHeld"`
	// Held are the periods the rollout waited outside its windows, in a
	// freeze, paused or for approval.
	Held []Hold `json:"held,omitempty"`
	// Workload is the GPU work the rollout destroyed, when the rehearsal
	// ran jobs on its nodes (Config.Workload).
	Workload *WorkloadResult `json:"workload,omitempty"`
}

// Hold is a period the rollout waited, and why.
type Hold struct {
	// Phase is the rollout's phase meanwhile, or Frozen.
	Phase v1alpha1.RolloutPhase `json:"phase"`
	// Freeze names the freeze that held it (its reason), for Frozen.
	Freeze string    `json:"freeze,omitempty"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
}

// Frozen is the hold of a freeze. It is no phase of the API: the planner
// reports a freeze as OutsideWindow (nothing may start) with the freeze in
// its message; the report tells the two apart, since a freeze is a
// decision someone took, not the policy's weekly pattern.
const Frozen v1alpha1.RolloutPhase = "Frozen"

// unnamedFreeze names a freeze written without a reason.
const unnamedFreeze = "freeze"

// Duration marshals as "1h30m" rather than nanoseconds.
type Duration time.Duration

// MarshalText writes the duration as time.Duration does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Summarise builds the report of a run of rollout ro.
func Summarise(ro *v1alpha1.DriverRollout, res *Result) Report {
	st := res.Status
	set := planner.SettingsFor(&ro.Spec, int(st.Total))
	r := Report{
		Nodes: int(st.Total), Outcome: res.Phase, Start: res.Start, End: res.End, Makespan: Duration(res.Makespan),
		Done: int(st.Nodes.Done), RolledBack: int(st.Nodes.RolledBack), Quarantined: int(st.Nodes.Quarantined),
		Untouched: int(st.Nodes.Pending), Failures: int(st.BudgetUsed), Budget: set.FailureBudget,
		Reason: readyMessage(st),
	}
	r.BudgetHeld = r.Failures <= r.Budget
	r.Workload = res.Workload
	slots := max(min(set.Parallel, set.MaxUnavailable), 1)
	var canary, rest []time.Duration
	// Only the nodes the rollout brought to the end count: a rollout that
	// stopped is measured against the work it did, not the work it skipped.
	for _, n := range res.Nodes {
		work, ok := res.Work[n.Name]
		if !ok || n.Phase != v1alpha1.NodeDone || n.Owner != ro.Name {
			continue
		}
		if slices.Contains(st.Canary.Nodes, n.Name) {
			canary = append(canary, work)
		} else {
			rest = append(rest, work)
		}
	}
	cal := planner.NewCalendar(&ro.Spec)
	lb := spread(canary, slots) + spread(rest, slots)
	if end := windowedEnd(cal, windowedEnd(cal, res.Start, canary, slots), rest, slots); !end.IsZero() {
		// The windows-aware bound; without windows or freezes it is the
		// one above.
		lb = end.Sub(res.Start)
	}
	r.LowerBound = Duration(lb)
	if res.Makespan > 0 {
		r.Efficiency = float64(lb) / float64(res.Makespan)
	}
	for _, p := range res.Phases {
		switch p.Phase {
		case v1alpha1.PhaseOutsideWindow:
			r.Held = append(r.Held, splitFreezes(ro.Spec.Freezes, p.From, p.To)...)
		case v1alpha1.PhasePaused, v1alpha1.PhaseWaitingForApproval:
			if p.To.After(p.From) {
				r.Held = append(r.Held, Hold{Phase: p.Phase, From: p.From, To: p.To})
			}
		}
	}
	return r
}

// splitFreezes cuts a period outside the windows into the parts a freeze
// held (Frozen, named) and the rest (OutsideWindow), in time order.
func splitFreezes(freezes []v1alpha1.FreezePeriod, from, to time.Time) []Hold {
	var out []Hold
	add := func(h Hold) {
		if h.To.After(h.From) {
			out = append(out, h)
		}
	}
	fs := slices.Clone(freezes)
	slices.SortFunc(fs, func(a, b v1alpha1.FreezePeriod) int { return a.Start.Compare(b.Start.Time) })
	t := from
	for _, f := range fs {
		s, e := f.Start.Time, f.End.Time
		if !e.After(t) || !s.Before(to) {
			continue
		}
		if s.After(t) {
			add(Hold{Phase: v1alpha1.PhaseOutsideWindow, From: t, To: s})
			t = s
		}
		name := f.Reason
		if name == "" {
			name = unnamedFreeze
		}
		end := e
		if e.After(to) {
			end = to
		}
		add(Hold{Phase: Frozen, Freeze: name, From: t, To: end})
		t = end
	}
	add(Hold{Phase: v1alpha1.PhaseOutsideWindow, From: t, To: to})
	return out
}

// spread is a lower bound on running jobs of the given lengths on slots
// machines: no shorter than the longest job, nor than the total shared
// perfectly.
func spread(jobs []time.Duration, slots int) time.Duration {
	var sum, longest time.Duration
	for _, j := range jobs {
		sum += j
		longest = max(longest, j)
	}
	return max(longest, sum/time.Duration(slots))
}

// windowedEnd is a lower bound on when jobs of the given lengths can all be
// done on slots machines from from, when a job may start only while cal is
// open (in a window, out of every freeze) and, once started, runs to its
// end: no sooner than the first open time plus the longest job, and no
// sooner than the time by which the slots could have worked through them
// all. Up to time E, a slot works at most the open time since the first
// open moment, plus, in each closed gap, the one job it may have started
// before the gap and run into it (at most the longest job, and no longer
// than the gap). With no windows nor freezes that is spread. Zero when cal
// does not open within its search horizon (or from is zero).
func windowedEnd(cal planner.Calendar, from time.Time, jobs []time.Duration, slots int) time.Time {
	if from.IsZero() || len(jobs) == 0 {
		return from // nothing to wait for
	}
	t0 := cal.NextAllowed(from)
	if t0.IsZero() {
		return time.Time{}
	}
	var sum, longest time.Duration
	for _, j := range jobs {
		sum += j
		longest = max(longest, j)
	}

	need := sum / time.Duration(slots) // the work each slot must do
	done := func(e time.Time) time.Time { return latest(e, t0.Add(longest)) }
	var worked time.Duration // the most a slot can have worked by a
	a := t0
	for range 5000 {
		b := cal.NextClose(a)
		if b.IsZero() {
			return done(a.Add(need - worked)) // open from a on
		}
		if e := a.Add(need - worked); !e.After(b) {
			return done(e)
		}
		worked += b.Sub(a)
		next := cal.NextAllowed(b)
		if next.IsZero() {
			return time.Time{}
		}
		overhang := min(next.Sub(b), longest)
		if e := b.Add(need - worked); !e.After(b.Add(overhang)) {
			return done(e)
		}
		worked += overhang
		a = next
	}
	return time.Time{}
}

func latest(ts ...time.Time) time.Time {
	out := ts[0]
	for _, t := range ts[1:] {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// Interval is a period of time.
type Interval struct{ From, To time.Time }

// OpenIntervals are the periods between from and to when nodes may start
// under cal, for drawing windows.
func OpenIntervals(cal planner.Calendar, from, to time.Time) []Interval {
	var out []Interval
	t := from
	for t.Before(to) && len(out) < 1000 {
		if ok, _ := cal.Allowed(t); !ok {
			t = cal.NextAllowed(t)
			if t.IsZero() {
				break
			}
			continue
		}
		end := cal.NextClose(t)
		if end.IsZero() || end.After(to) {
			end = to
		}
		out = append(out, Interval{From: t, To: end})
		t = end
	}
	return out
}
