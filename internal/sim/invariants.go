package sim

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Checker checks the rollout's safety invariants at every step of a run and
// its convergence at the end. It recomputes everything from the nodes and the
// spec rather than trusting the planner's own bookkeeping, so a planner bug
// cannot hide behind the same bug here.
type Checker struct {
	violations []string
	started    map[string]bool
	touched    map[string]bool
	// cordonedAtStart: the node was unschedulable when the rollout started
	// it, seen from the nodes before the step, not from what the planner
	// recorded, so a planner that forgets an admin's cordon is caught.
	cordonedAtStart map[string]bool
	// oneStep: the checker sees single steps from arbitrary states, so the
	// rules that need the whole history are off.
	oneStep bool
}

// NewStepChecker returns a checker for single planning steps from arbitrary
// snapshots: the rules that need a whole run's history are off.
func NewStepChecker() *Checker {
	c := NewChecker()
	c.oneStep = true
	return c
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{started: map[string]bool{}, touched: map[string]bool{}, cordonedAtStart: map[string]bool{}}
}

// Violations are what broke, in order, at most one line per rule and step.
func (c *Checker) Violations() []string { return c.violations }

func (c *Checker) fail(s Step, format string, args ...any) {
	when := "at the end:"
	if !s.At.IsZero() {
		when = s.At.UTC().Format("2006-01-02 15:04:05")
	}
	c.violations = append(c.violations, when+" "+fmt.Sprintf(format, args...))
}

// edges are the only moves a node may make.
var edges = map[v1alpha1.NodePhase][]v1alpha1.NodePhase{
	v1alpha1.NodePending:     {v1alpha1.NodeDraining},
	v1alpha1.NodeDraining:    {v1alpha1.NodeInstalling, v1alpha1.NodeRollingBack},
	v1alpha1.NodeInstalling:  {v1alpha1.NodeValidating, v1alpha1.NodeRollingBack},
	v1alpha1.NodeValidating:  {v1alpha1.NodeSoaking, v1alpha1.NodeRollingBack},
	v1alpha1.NodeSoaking:     {v1alpha1.NodeDone, v1alpha1.NodeRollingBack},
	v1alpha1.NodeDone:        {v1alpha1.NodeRollingBack}, // abort only
	v1alpha1.NodeRollingBack: {v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined},
}

// view is the checker's own reading of a node list under a spec.
type view struct {
	selected             []*planner.Node
	unavailable, flying  int
	failures             int
	canaryDone, canaryN  int
	canaryFlying, others int // in flight: canary nodes, other nodes
}

func see(spec *v1alpha1.DriverRolloutSpec, canary []string, nodes []planner.Node) view {
	var v view
	sel, _ := metav1.LabelSelectorAsSelector(&spec.NodeSelector)
	var oos []labels.Selector
	for i := range spec.OutOfService {
		if s, err := metav1.LabelSelectorAsSelector(&spec.OutOfService[i]); err == nil {
			oos = append(oos, s)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if sel == nil || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		v.selected = append(v.selected, n)
		fly := planner.InFlight(n.Phase)
		out := n.Unschedulable || !n.Ready || fly || n.Phase == v1alpha1.NodeQuarantined
		for _, s := range oos {
			out = out || s.Matches(labels.Set(n.Labels))
		}
		if out {
			v.unavailable++
		}
		if fly {
			v.flying++
		}
		if n.Failed {
			v.failures++
		}
		isCanary := slices.Contains(canary, n.Name)
		switch {
		case isCanary:
			v.canaryN++
			if n.Phase == v1alpha1.NodeDone {
				v.canaryDone++
			}
			if fly {
				v.canaryFlying++
			}
		case fly:
			v.others++
		}
	}
	return v
}

// Step checks one planning pass.
func (c *Checker) Step(s Step) {
	spec := &s.Rollout.Spec
	canary := s.Result.Status.Canary.Nodes
	after := see(spec, canary, s.After)
	set := planner.SettingsFor(spec, len(after.selected))
	selected := map[string]bool{}
	for _, n := range after.selected {
		selected[n.Name] = true
	}

	var starts []planner.Transition
	for _, t := range s.Result.Transitions {
		c.touched[t.Node] = true
		if !selected[t.Node] {
			c.fail(s, "%s moved but the selector does not pick it", t.Node)
		}
		if t.Reason == "" {
			c.fail(s, "%s moved %s → %s without a reason", t.Node, t.From, t.To)
		}
		if t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeDone {
			// Settled: a node already on the target is marked Done without
			// being touched. It must really be on the target, and stay as
			// it was (no cordon, no start).
			for i := range s.Before {
				if b := &s.Before[i]; b.Name == t.Node {
					if b.DriverVersion != spec.TargetVersion || t.Cordon || spec.Abort {
						c.fail(s, "%s settled Done without being on %s (reports %q, cordon=%t, abort=%t)", t.Node, spec.TargetVersion, b.DriverVersion, t.Cordon, spec.Abort)
					}
					c.started[t.Node] = true
					c.cordonedAtStart[t.Node] = b.Unschedulable
				}
			}
			continue
		}
		if !slices.Contains(edges[t.From], t.To) {
			c.fail(s, "%s made a forbidden move %s → %s", t.Node, t.From, t.To)
		}
		if t.From == v1alpha1.NodePending {
			starts = append(starts, t)
			c.started[t.Node] = true
			for i := range s.Before {
				if s.Before[i].Name == t.Node {
					c.cordonedAtStart[t.Node] = s.Before[i].Unschedulable
				}
			}
		}
	}
	// Only nodes in flight can fail, and nothing starts once the budget is
	// spent, so the budget is exceeded by at most the nodes in flight.
	before := see(spec, canary, s.Before)
	if after.failures > max(before.failures, set.FailureBudget)+before.flying {
		c.fail(s, "%d failures: more than the budget %d plus the %d nodes in flight", after.failures, set.FailureBudget, before.flying)
	}
	if !c.oneStep && after.failures > set.FailureBudget+set.Parallel {
		c.fail(s, "%d failures exceed the budget %d by more than parallelNodes %d", after.failures, set.FailureBudget, set.Parallel)
	}
	if len(starts) == 0 {
		return
	}
	if after.unavailable > set.MaxUnavailable {
		c.fail(s, "started %s with %d nodes unavailable, maxUnavailable %d", starts[0].Node, after.unavailable, set.MaxUnavailable)
	}
	if after.flying > set.Parallel {
		c.fail(s, "started %s with %d nodes in flight, parallelNodes %d", starts[0].Node, after.flying, set.Parallel)
	}
	if ok, why := planner.NewCalendar(spec).Allowed(s.At); !ok {
		c.fail(s, "started %s while %s", starts[0].Node, why)
	}
	if spec.Paused || spec.Abort {
		c.fail(s, "started %s while paused=%t abort=%t", starts[0].Node, spec.Paused, spec.Abort)
	}
	if after.failures > set.FailureBudget {
		c.fail(s, "started %s with %d failures, budget %d", starts[0].Node, after.failures, set.FailureBudget)
	}
	for _, t := range starts {
		if slices.Contains(canary, t.Node) {
			if after.others > 0 {
				c.fail(s, "canary %s started alongside %d other nodes in flight", t.Node, after.others)
			}
			continue
		}
		if after.canaryDone < after.canaryN {
			c.fail(s, "%s started before the canary passed (%d of %d done)", t.Node, after.canaryDone, after.canaryN)
		}
		if after.canaryN > 0 && spec.Approval != s.Rollout.Name && !spec.Canary.AutoApproveAfterSoak {
			c.fail(s, "%s started past the canary without approval (approval %q)", t.Node, spec.Approval)
		}
	}
}

// Final checks the end of a run: nothing in flight, every node the rollout
// started ended Done, rolled back or quarantined, every other node untouched,
// and no node left cordoned by the rollout.
func (c *Checker) Final(ro *v1alpha1.DriverRollout, nodes []planner.Node) {
	s := Step{Rollout: ro}
	for i := range nodes {
		n := &nodes[i]
		phase := n.Phase
		switch {
		case !c.started[n.Name]:
			if c.touched[n.Name] || (phase != "" && phase != v1alpha1.NodePending) {
				c.fail(s, "%s was never started but ended %s", n.Name, phase)
			}
		case phase == v1alpha1.NodeDone:
			if n.DriverVersion != ro.Spec.TargetVersion {
				c.fail(s, "%s is Done but reports %q", n.Name, n.DriverVersion)
			}
			fallthrough
		case phase == v1alpha1.NodeRolledBack:
			if n.Unschedulable != c.cordonedAtStart[n.Name] {
				c.fail(s, "%s ended %s with unschedulable=%t but was cordoned=%t when the rollout started it", n.Name, phase, n.Unschedulable, c.cordonedAtStart[n.Name])
			}
			if phase == v1alpha1.NodeRolledBack && n.DriverVersion != ro.Spec.PreviousVersion {
				c.fail(s, "%s rolled back but reports %q", n.Name, n.DriverVersion)
			}
		case phase == v1alpha1.NodeQuarantined:
			if !n.Unschedulable {
				c.fail(s, "%s is quarantined but schedulable", n.Name)
			}
		default:
			c.fail(s, "%s was started and ended %s", n.Name, phase)
		}
	}
}
