package simcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// Checker checks the rollout's safety invariants at every step of a run and
// its convergence at the end. It recomputes everything from the nodes and the
// spec rather than trusting the planner's own bookkeeping, so a planner bug
// cannot hide behind the same bug here.
//
// With several rollouts in the world it also checks, from the world's own
// record of who holds each cordon and who owns each node, that an admin's
// cordon is never lifted and is marked the first time a rollout acts on the
// node, that a node is uncordoned only by the rollout that cordoned it, that
// a rollout never moves a node another live rollout owns (two rollouts
// never both take a node), nor starts a free one an older rollout selects
// too, and that it reports every such node in its Overlap condition.
type Checker struct {
	violations []string
	// runs are each rollout's history, by rollout name.
	runs map[string]*run
	// cordons are who held each node's cordon after the last step, when
	// the steps say (nil otherwise).
	cordons map[string]string
	// oneStep: the checker sees single steps from arbitrary states, so the
	// rules that need the whole history are off.
	oneStep bool
}

// run is one rollout's history as the checker saw it.
type run struct {
	started map[string]bool
	touched map[string]bool
	// cordonedAtStart: the node was unschedulable when the rollout started
	// it, seen from the nodes before the step, not from what the planner
	// recorded, so a planner that forgets an admin's cordon is caught.
	cordonedAtStart map[string]bool
	// canarySeen are every node a status of the rollout ever named as a
	// canary, and canaryProven says whether the canary ever passed: every
	// node a status named, Done at once. Kept across steps, so a planner
	// that loses its canary (a canary node that left the cluster) and goes
	// on without one is caught.
	canarySeen   map[string]bool
	canaryProven bool
	// drains counts the rollout's starts (cordon and drain) of each node.
	drains map[string]int
}

// forget drops what the run knows of a node that left the cluster (or its
// pool) and may come back as a new one.
func (r *run) forget(node string) {
	delete(r.started, node)
	delete(r.touched, node)
	delete(r.cordonedAtStart, node)
	delete(r.drains, node)
}

func (c *Checker) run(name string) *run {
	r := c.runs[name]
	if r == nil {
		r = &run{started: map[string]bool{}, touched: map[string]bool{}, cordonedAtStart: map[string]bool{}, canarySeen: map[string]bool{}, drains: map[string]int{}}
		c.runs[name] = r
	}
	return r
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
	return &Checker{runs: map[string]*run{}}
}

// Violations are what broke, in order, at most one line per rule and step.
func (c *Checker) Violations() []string { return c.violations }

func (c *Checker) fail(s sim.Step, format string, args ...any) {
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
	v1alpha1.NodeDone:        {v1alpha1.NodeRollingBack}, // an abort, or its maintenance domain rolling back
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

func see(ro *v1alpha1.DriverRollout, others []planner.Peer, canary []string, nodes []planner.Node) view {
	var v view
	spec := &ro.Spec
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
		fly := n.Phase.InFlight()
		// A node left to another rollout counts as unavailable: that
		// rollout may take it out at any moment.
		out := n.Unschedulable || !n.Ready || fly || n.Phase == v1alpha1.NodeQuarantined || leftTo(ro, others, n) != ""
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

// leftTo is the other rollout node n is left to, as ro's planner must
// see it, recomputed here: the live rollout it belongs to, or, when it
// belongs to none and has no progress, the oldest live rollout not being
// deleted that was created before ro (or with it, and first by name) and
// selects it too. "" when n is ro's to move.
func leftTo(ro *v1alpha1.DriverRollout, others []planner.Peer, n *planner.Node) string {
	if n.Owner != "" && n.Owner != ro.Name {
		return n.Owner
	}
	if n.Owner != "" || (n.Phase != "" && n.Phase != v1alpha1.NodePending) {
		return ""
	}
	best := -1
	for i := range others {
		o := &others[i]
		if o.Deleting || !before(o.Name, o.Created, ro.Name, ro.CreationTimestamp.Time) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&o.NodeSelector)
		if err != nil || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		if best < 0 || before(o.Name, o.Created, others[best].Name, others[best].Created) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return others[best].Name
}

// before: rollout a goes before rollout b (older, or first by name).
func before(a string, ac time.Time, b string, bc time.Time) bool {
	if !ac.Equal(bc) {
		return ac.Before(bc)
	}
	return a < b
}

// sim.Step checks one planning pass, or one release of a deleted rollout's nodes.
func (c *Checker) Step(s sim.Step) {
	if s.CordonsAfter != nil {
		defer func() { c.cordons = s.CordonsAfter }()
	}
	if s.Released != nil {
		c.release(s)
		return
	}
	c.cordonRules(s)
	c.ownerRules(s)
	c.domainRules(s)
	c.ofedRules(s)
	spec := &s.Rollout.Spec
	canary := s.Result.Status.Canary.Nodes
	after := see(s.Rollout, s.Others, canary, s.After)
	set := planner.SettingsFor(spec, len(after.selected))
	selected := map[string]bool{}
	for _, n := range after.selected {
		selected[n.Name] = true
	}
	h := c.run(s.Rollout.Name)
	sel, _ := metav1.LabelSelectorAsSelector(&spec.NodeSelector)
	for i := range s.Before {
		// A node that belongs to nobody and that the rollout does not
		// select left the cluster or its pool: if it comes back, it is a
		// new node.
		if b := &s.Before[i]; b.Owner == "" && (sel == nil || !sel.Matches(labels.Set(b.Labels))) {
			h.forget(b.Name)
		}
	}
	for _, name := range canary {
		h.canarySeen[name] = true
	}
	if after.canaryN > 0 && after.canaryDone == after.canaryN {
		h.canaryProven = true
	}

	prior := see(s.Rollout, s.Others, canary, s.Before)
	var starts []planner.Transition
	for _, t := range s.Result.Transitions {
		if !selected[t.Node] {
			c.fail(s, "%s moved but the selector does not pick it", t.Node)
		}
		if t.Pool != "" {
			c.poolRule(s, t)
		}
		if t.Reason == "" {
			c.fail(s, "%s moved %s → %s without a reason", t.Node, t.From, t.To)
		}
		if t.Join {
			c.joinRules(s, t, prior)
			// A node without a driver label or progress is a new one (a
			// node deleted and registered again under its name looks so):
			// what the rollout did to it before is another node's story.
			h.forget(t.Node)
			continue
		}
		if ofedSelfMove(s, t) || c.draSelfMove(s, t) {
			continue
		}
		c.draSwapRule(s, t)
		h.touched[t.Node] = true
		if t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeDone {
			// Settled: a node already on the target is marked Done without
			// being touched. It must really be on the target, and stay as
			// it was (no cordon, no start).
			for i := range s.Before {
				if b := &s.Before[i]; b.Name == t.Node {
					if b.DriverVersion != spec.TargetVersion || t.Cordon || spec.Abort {
						c.fail(s, "%s settled Done without being on %s (reports %q, cordon=%t, abort=%t)", t.Node, spec.TargetVersion, b.DriverVersion, t.Cordon, spec.Abort)
					}
					h.started[t.Node] = true
					h.cordonedAtStart[t.Node] = b.Unschedulable
				}
			}
			continue
		}
		if !slices.Contains(edges[t.From], t.To) {
			c.fail(s, "%s made a forbidden move %s → %s", t.Node, t.From, t.To)
		}
		if t.From == v1alpha1.NodePending {
			starts = append(starts, t)
			h.started[t.Node] = true
			for i := range s.Before {
				if s.Before[i].Name == t.Node {
					h.cordonedAtStart[t.Node] = s.Before[i].Unschedulable
				}
			}
		}
	}
	// Only nodes in flight can fail, and nothing starts once the budget is
	// spent, so the budget is exceeded by at most the nodes in flight.
	if after.failures > max(prior.failures, set.FailureBudget)+prior.flying {
		c.fail(s, "%d failures: more than the budget %d plus the %d nodes in flight", after.failures, set.FailureBudget, prior.flying)
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
		if !c.oneStep && len(h.canarySeen) > 0 && !h.canaryProven {
			c.fail(s, "%s started but the rollout's canary (%v) never passed", t.Node, keys(h.canarySeen))
		}
		if !c.oneStep && len(h.canarySeen) > 0 && spec.Approval != s.Rollout.Name && !spec.Canary.AutoApproveAfterSoak {
			c.fail(s, "%s started past the rollout's canary (%v) without approval (approval %q)", t.Node, keys(h.canarySeen), spec.Approval)
		}
	}
}

// joinRules checks a join (planner.Transition.Join): a label write on a
// pending node that had no driver label, quarantine mark or
// out-of-service mark, changing nothing else (no phase, cordon, failure or
// quarantine), that labels a node running a driver with that driver, and
// never gives a node without one a driver the canary has not proven
// (judged from the nodes before the step: the canary done and approved, or
// no canary; no abort; the budget not spent).
func (c *Checker) joinRules(s sim.Step, t planner.Transition, prior view) {
	spec := &s.Rollout.Spec
	if t.From != v1alpha1.NodePending || t.To != v1alpha1.NodePending || (t.Driver == "" && t.Pool == "") ||
		t.Cordon || t.Uncordon || t.Failure || t.Quarantine || t.Release {
		c.fail(s, "%s joined with a move that is not a label write: %s → %s driver=%q pool=%q", t.Node, t.From, t.To, t.Driver, t.Pool)
		return
	}
	var b *planner.Node
	for i := range s.Before {
		if s.Before[i].Name == t.Node {
			b = &s.Before[i]
		}
	}
	if b == nil {
		return
	}
	if _, ok := b.Labels[v1alpha1.LabelDriver]; ok && t.Driver != "" {
		c.fail(s, "%s joined but already carried driver label %q", t.Node, b.Labels[v1alpha1.LabelDriver])
	}
	if t.Driver == "" {
		return // a pool label alone: poolRule judges it
	}
	if b.Labels[v1alpha1.LabelQuarantined] == "true" {
		c.fail(s, "%s joined while quarantined", t.Node)
	}
	for i := range spec.OutOfService {
		if sel, err := metav1.LabelSelectorAsSelector(&spec.OutOfService[i]); err == nil && sel.Matches(labels.Set(b.Labels)) {
			c.fail(s, "%s joined while out of service", t.Node)
		}
	}
	if b.DriverVersion != "" {
		if b.DriverVersion != t.Driver && !planner.DriverMatches(b.DriverVersion, t.Driver) {
			c.fail(s, "%s runs %s but joined labelled %s", t.Node, b.DriverVersion, t.Driver)
		}
		return
	}
	if t.Driver != spec.TargetVersion || spec.TargetVersion == spec.PreviousVersion {
		if t.Driver != spec.PreviousVersion && t.Driver != spec.TargetVersion {
			c.fail(s, "%s joined with no driver labelled %s, neither the target %s nor the previous %s", t.Node, t.Driver, spec.TargetVersion, spec.PreviousVersion)
		}
		return
	}
	proven := prior.canaryN == 0 || (prior.canaryDone == prior.canaryN && (spec.Approval == s.Rollout.Name || spec.Canary.AutoApproveAfterSoak))
	if !proven || spec.Abort || prior.failures > planner.SettingsFor(spec, len(prior.selected)).FailureBudget {
		c.fail(s, "%s joined with no driver and was given the target %s before it was proven (canary %d of %d done, approval %q, abort=%t, %d failures)",
			t.Node, t.Driver, prior.canaryDone, prior.canaryN, spec.Approval, spec.Abort, prior.failures)
	}
}

// poolRule checks a pool label a transition gives: the node had none, and
// exactly one of the spec's pools selects it, the one named.
func (c *Checker) poolRule(s sim.Step, t planner.Transition) {
	var b *planner.Node
	for i := range s.Before {
		if s.Before[i].Name == t.Node {
			b = &s.Before[i]
		}
	}
	if b == nil {
		return
	}
	if v, ok := b.Labels[v1alpha1.LabelPool]; ok {
		c.fail(s, "%s given pool %s but it was in pool %q", t.Node, t.Pool, v)
		return
	}
	var matched []string
	for i := range s.Rollout.Spec.Pools {
		p := &s.Rollout.Spec.Pools[i]
		if sel, err := metav1.LabelSelectorAsSelector(&p.NodeSelector); err == nil && sel.Matches(labels.Set(b.Labels)) {
			matched = append(matched, p.Name)
		}
	}
	if len(matched) != 1 || matched[0] != t.Pool {
		c.fail(s, "%s given pool %s, but the spec's pools that select it are %v", t.Node, t.Pool, matched)
	}
}

// cordonRules checks the cordons against who holds them, when the step
// says: a rollout uncordons only a node whose cordon it holds itself; a
// move on a node whose cordon an admin holds records the admin's cordon in
// the same write; the mark, once there, is never dropped while the admin
// still holds the cordon.
func (c *Checker) cordonRules(s sim.Step) {
	if s.CordonsBefore == nil {
		return
	}
	name := s.Rollout.Name
	after := map[string]*planner.Node{}
	for i := range s.After {
		after[s.After[i].Name] = &s.After[i]
	}
	for _, t := range s.Result.Transitions {
		holder, cordoned := s.CordonsBefore[t.Node]
		if t.Uncordon && cordoned && holder != name {
			c.fail(s, "%s uncordoned %s, whose cordon %s holds", name, t.Node, holderName(holder))
		}
		if n := after[t.Node]; holder == "admin" && n != nil && n.Unschedulable && !n.AdminCordoned {
			c.fail(s, "%s moved %s %s → %s while an admin holds its cordon, without recording it", name, t.Node, t.From, t.To)
		}
	}
	for node, holder := range s.CordonsBefore {
		n := after[node]
		if holder != "admin" || n == nil {
			continue
		}
		if !n.Unschedulable {
			c.fail(s, "%s lifted the admin's cordon on %s", name, node)
		}
	}
	for i := range s.Before {
		b := &s.Before[i]
		if n := after[b.Name]; b.AdminCordoned && s.CordonsBefore[b.Name] == "admin" && n != nil && !n.AdminCordoned {
			c.fail(s, "%s dropped the admin-cordon mark of %s", name, b.Name)
		}
	}
}

func holderName(h string) string {
	if h == "admin" {
		return "an admin"
	}
	return "rollout " + h
}

// ownerRules checks node ownership: a rollout moves only nodes that belong
// to it or to no live rollout (in the world, at the moment it writes: a
// racing pass may have read them free), and moves them from the phase they
// are really in (a node is never started twice), never starts a free node
// an older rollout selects too, takes every node it moves, and reports
// every node it leaves to another rollout in its Overlap condition, naming
// that rollout.
func (c *Checker) ownerRules(s sim.Step) {
	name := s.Rollout.Name
	live := map[string]bool{name: true}
	for _, o := range s.Others {
		live[o.Name] = true
	}
	before := map[string]*planner.Node{}
	for i := range s.Before {
		before[s.Before[i].Name] = &s.Before[i]
	}
	after := map[string]*planner.Node{}
	for i := range s.After {
		after[s.After[i].Name] = &s.After[i]
	}
	truth := before
	if s.Truth != nil {
		truth = map[string]*planner.Node{}
		for i := range s.Truth {
			truth[s.Truth[i].Name] = &s.Truth[i]
		}
	}
	for _, t := range s.Result.Transitions {
		tn := truth[t.Node]
		if tn == nil {
			continue
		}
		owner := tn.Owner
		switch {
		case owner != "" && owner != name && live[owner]:
			c.fail(s, "%s moved %s %s → %s, which belongs to rollout %s", name, t.Node, t.From, t.To, owner)
		case s.Truth == nil:
		case owner == name && tn.Phase.OrPending() != t.From:
			// Two passes acted on one reading: the node was started (or
			// moved) twice.
			c.fail(s, "%s moved %s %s → %s but it was %s already", name, t.Node, t.From, t.To, tn.Phase.OrPending())
		case owner != name && t.From != v1alpha1.NodePending:
			c.fail(s, "%s moved %s %s → %s but the node was not its own", name, t.Node, t.From, t.To)
		}
		if b := before[t.Node]; b != nil && t.From == v1alpha1.NodePending {
			if other := leftTo(s.Rollout, s.Others, b); other != "" && other != owner {
				c.fail(s, "%s started %s, which the older rollout %s selects too", name, t.Node, other)
			}
		}
		if n := after[t.Node]; n != nil && n.Owner != name {
			c.fail(s, "%s moved %s but the node names %q as its owner", name, t.Node, n.Owner)
		}
	}
	if s.Result.Status.Conditions == nil || s.Refused > 0 {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.Rollout.Spec.NodeSelector)
	if err != nil {
		return
	}
	want := map[string]bool{}
	for i := range s.After {
		n := &s.After[i]
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		if other := leftTo(s.Rollout, s.Others, n); other != "" {
			want[other] = true
		}
	}
	var cond *metav1.Condition
	for i := range s.Result.Status.Conditions {
		if s.Result.Status.Conditions[i].Type == v1alpha1.ConditionOverlap {
			cond = &s.Result.Status.Conditions[i]
		}
	}
	switch {
	case len(want) == 0 && cond != nil && cond.Status == metav1.ConditionTrue:
		c.fail(s, "%s reports an overlap but leaves no node to another rollout: %s", name, cond.Message)
	case len(want) > 0 && (cond == nil || cond.Status != metav1.ConditionTrue):
		c.fail(s, "%s leaves nodes to %v but reports no Overlap", name, keys(want))
	case len(want) > 0:
		for other := range want {
			if m := cond.Message; !strings.Contains(m, "DriverRollout "+other+" ") && !strings.Contains(m, "DriverRollout "+other+",") {
				c.fail(s, "%s's Overlap condition does not name %s: %s", name, other, cond.Message)
			}
		}
	}
}

// release checks what deleting a rollout leaves: its nodes belong to
// nobody, no cordon is lifted, and the admin-cordon mark stays while an
// admin holds the cordon.
func (c *Checker) release(s sim.Step) {
	after, before := map[string]*planner.Node{}, map[string]*planner.Node{}
	for i := range s.After {
		after[s.After[i].Name] = &s.After[i]
	}
	for i := range s.Before {
		before[s.Before[i].Name] = &s.Before[i]
	}
	for _, name := range s.Released {
		n := after[name]
		if n == nil {
			continue
		}
		if n.Owner != "" || n.Phase != "" {
			c.fail(s, "deleting %s left %s owned by %q in phase %q", s.Rollout.Name, name, n.Owner, n.Phase)
		}
		if holder, ok := s.CordonsBefore[name]; ok {
			if !n.Unschedulable {
				c.fail(s, "deleting %s uncordoned %s, whose cordon %s held", s.Rollout.Name, name, holderName(holder))
			}
			if b := before[name]; holder == "admin" && b != nil && b.AdminCordoned && !n.AdminCordoned {
				c.fail(s, "deleting %s dropped the admin-cordon mark of %s", s.Rollout.Name, name)
			}
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Final checks the end of a run for the live rollout ro, over its view of
// the nodes: nothing in flight, every node the rollout started ended Done,
// rolled back or quarantined, every other node untouched, and no node left
// cordoned by the rollout.
func (c *Checker) Final(ro *v1alpha1.DriverRollout, nodes []planner.Node) {
	c.finalDomains(ro, nodes)
	s := sim.Step{Rollout: ro}
	h := c.run(ro.Name)
	sel, _ := metav1.LabelSelectorAsSelector(&ro.Spec.NodeSelector)
	for i := range nodes {
		n := &nodes[i]
		phase := n.Phase
		if n.Owner != "" && n.Owner != ro.Name {
			continue
		}
		if n.Owner == "" && (sel == nil || !sel.Matches(labels.Set(n.Labels))) {
			continue // left the cluster or the pool
		}
		switch {
		case !h.started[n.Name]:
			if h.touched[n.Name] || (phase != "" && phase != v1alpha1.NodePending) {
				c.fail(s, "%s was never started but ended %s", n.Name, phase)
			}
		case phase == v1alpha1.NodeDone:
			if n.DriverVersion != ro.Spec.TargetVersion {
				c.fail(s, "%s is Done but reports %q", n.Name, n.DriverVersion)
			}
			fallthrough
		case phase == v1alpha1.NodeRolledBack:
			switch {
			case c.cordons != nil:
				// Who holds the cordon is known: only the rollout's own
				// is wrong here (an admin may cordon a Done node).
				if c.cordons[n.Name] == ro.Name {
					c.fail(s, "%s ended %s still cordoned by the rollout", n.Name, phase)
				}
			case n.Unschedulable != h.cordonedAtStart[n.Name]:
				c.fail(s, "%s ended %s with unschedulable=%t but was cordoned=%t when the rollout started it", n.Name, phase, n.Unschedulable, h.cordonedAtStart[n.Name])
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
