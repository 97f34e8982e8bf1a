package sim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// randomOperatorConfig draws a rollout on the gpu-operator actuator with
// what can go wrong on that path: crash-looping drivers, drains over their
// timeout, wrong versions, XIDs in the soak, NotReady spells, admins
// cordoning (their cordons must survive the operator), windows, freezes,
// remediation labels, approvals right and wrong, pauses and aborts. Most
// nodes start held, as the rollout before this one leaves them.
func randomOperatorConfig(seed uint64) sim.Config {
	r := rand.New(rand.NewPCG(seed, 17))
	name := "op" + strconv.FormatUint(seed, 10)
	b := randomPolicy(r, name)
	if r.IntN(2) == 0 {
		tz := []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"}[r.IntN(4)]
		start := r.IntN(24)
		end := (start + 2 + r.IntN(20)) % 24
		b.Window(fmt.Sprintf("%02d:00", start), fmt.Sprintf("%02d:30", end), tz)
	}
	if r.IntN(3) == 0 {
		from := monday.Add(time.Duration(r.IntN(48)) * time.Hour)
		b.Freeze(from, from.Add(time.Duration(1+r.IntN(36))*time.Hour), "random freeze")
	}
	ro := b.Build()
	ro.Spec.Actuator = v1alpha1.ActuatorGPUOperator

	n := 3 + r.IntN(28)
	nodes := pt.Nodes("gpu", n)
	for i := range nodes {
		l := map[string]string{v1alpha1.LabelPool: pt.Pool}
		if r.IntN(10) > 0 {
			l[v1alpha1.LabelOperatorUpgradeSkip] = "true"
		}
		nodes[i].Labels = l
		switch r.IntN(12) {
		case 0:
			nodes[i].Unschedulable = true // cordoned by an admin before the rollout
		case 1:
			nodes[i].Ready = false
		case 2:
			nodes[i].DriverVersion = pt.Target // already there
		}
	}
	prof := sim.DefaultProfile()
	prof.InstallFailRate = r.Float64() * 0.3
	prof.WrongVersionRate = r.Float64() * 0.05
	prof.XIDRate = r.Float64() * 0.3
	prof.RollbackFailRate = r.Float64() * 0.5
	prof.NotReadyRate = r.Float64() * 0.3
	prof.AdminCordonRate = r.Float64() * 0.2
	if r.IntN(5) == 0 {
		prof.Drain = sim.Fixed(3 * time.Hour) // over every drain timeout drawn
	}

	var script []sim.Event
	at := func() time.Duration { return time.Duration(r.IntN(72*60)) * time.Minute }
	for range r.IntN(4) {
		switch r.IntN(6) {
		case 0, 1:
			script = append(script, sim.Event{At: at(), Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Approval = name })})
		case 2:
			script = append(script, sim.Event{At: at(), Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Approval = "someone-else" })})
		case 3:
			p := at()
			script = append(script,
				sim.Event{At: p, Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Paused = true })},
				sim.Event{At: p + time.Duration(r.IntN(600))*time.Minute, Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Paused = false })})
		case 4:
			script = append(script, sim.Event{At: at(), Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Abort = true })})
		case 5:
			node := nodes[r.IntN(n)].Name
			p := at()
			script = append(script,
				sim.Event{At: p, Do: func(w *sim.World) { w.SetLabel(node, "gpufleet.io/remediation", "true") }},
				sim.Event{At: p + 3*time.Hour, Do: func(w *sim.World) { w.SetLabel(node, "gpufleet.io/remediation", "") }})
		}
	}
	for _, nd := range nodes {
		if !nd.Ready {
			script = append(script, sim.Event{At: at(), Do: func(w *sim.World) { w.SetReady(nd.Name, true) }})
		}
	}
	return sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: seed, Profile: prof, Script: script}
}

// operatorChecker checks the gpu-operator path's rules at every step, from
// the nodes and the spec, not from the planner's bookkeeping.
type operatorChecker struct {
	violations []string
	// released: the rollout has released the node at some step.
	released map[string]bool
	// unheld: nodes that started without the skip label: the operator may
	// take them before any pass (the path's limit: holds come from the
	// rollout in place before render changes the version).
	unheld map[string]bool
	// soakFrom: when each node entered Soaking; done: when it went Done.
	soakFrom, done map[string]time.Time
}

func newOperatorChecker(cfg sim.Config) *operatorChecker {
	unheld := map[string]bool{}
	for i := range cfg.Nodes {
		if !skip(&cfg.Nodes[i]) {
			unheld[cfg.Nodes[i].Name] = true
		}
	}
	return &operatorChecker{unheld: unheld, released: map[string]bool{}, soakFrom: map[string]time.Time{}, done: map[string]time.Time{}}
}

func (c *operatorChecker) fail(at time.Time, format string, args ...any) {
	if len(c.violations) < 20 {
		c.violations = append(c.violations, at.UTC().Format("2006-01-02 15:04:05")+" "+fmt.Sprintf(format, args...))
	}
}

func skip(n *planner.Node) bool { return n.Labels[v1alpha1.LabelOperatorUpgradeSkip] == "true" }

func (c *operatorChecker) step(s sim.Step) {
	if s.Released != nil || s.Rollout == nil {
		return
	}
	ro := s.Rollout
	spec := &ro.Spec
	sel, _ := metav1.LabelSelectorAsSelector(&spec.NodeSelector)
	var oos []labels.Selector
	for i := range spec.OutOfService {
		if o, err := metav1.LabelSelectorAsSelector(&spec.OutOfService[i]); err == nil {
			oos = append(oos, o)
		}
	}
	selected := func(n *planner.Node) bool { return sel.Matches(labels.Set(n.Labels)) }
	// A pass never lifts an admin's cordon (the operator's uncordons
	// between passes are counted by the model: OperatorLiftedAdminCordons).
	for node, h := range s.CordonsBefore {
		if h == "admin" && s.CordonsAfter[node] != "admin" {
			c.fail(s.At, "%s: an admin's cordon was lifted (held by %q now)", node, s.CordonsAfter[node])
		}
	}
	before := map[string]*planner.Node{}
	unavailable, failures, flying := 0, 0, 0
	set := planner.SettingsFor(spec, 0)
	total := 0
	for i := range s.Before {
		n := &s.Before[i]
		before[n.Name] = n
		if !selected(n) {
			continue
		}
		total++
		if n.Failed {
			failures++
		}
	}
	// Slots and unavailability are judged after the pass: a node it
	// finished freed its slot.
	for i := range s.After {
		n := &s.After[i]
		if !selected(n) {
			continue
		}
		out := false
		for _, o := range oos {
			out = out || o.Matches(labels.Set(n.Labels))
		}
		if n.Unschedulable || !n.Ready || out || (n.Owner != "" && n.Owner != ro.Name) || planner.OperatorReleased(n.Phase) || n.Phase == v1alpha1.NodeQuarantined {
			unavailable++
		}
		if selected(n) && (n.Owner == "" || n.Owner == ro.Name) &&
			(n.Phase.InFlight() || v1alpha1.OperatorUpgrading(n.Labels[v1alpha1.LabelOperatorUpgradeState])) {
			flying++
		}
	}
	maxUnavailable := planner.MaxUnavailable(spec.MaxUnavailable, total)
	canary := ro.Status.Canary.Nodes
	canaryDone := true
	doneNow := map[string]bool{}
	for _, t := range s.Result.Transitions {
		if t.To == v1alpha1.NodeDone {
			doneNow[t.Node] = true
		}
	}
	for _, name := range canary {
		if n := before[name]; n != nil && n.Phase != v1alpha1.NodeDone && !doneNow[name] {
			canaryDone = false
		}
	}
	cal := planner.NewCalendar(spec)
	starts, costly := 0, 0
	for _, t := range s.Result.Transitions {
		if t.Cordon || t.Uncordon {
			c.fail(s.At, "%s: %s → %s cordons or uncordons (this path never does)", t.Node, t.From, t.To)
		}
		if t.To == v1alpha1.NodeRollingBack && !spec.Abort {
			c.fail(s.At, "%s: rolled back without an abort (this path has no per-node rollback)", t.Node)
		}
		if t.To == v1alpha1.NodeSoaking {
			c.soakFrom[t.Node] = s.At
		}
		if t.To == v1alpha1.NodeDone && t.From == v1alpha1.NodeSoaking {
			c.done[t.Node] = s.At
		}
		if t.Release {
			c.released[t.Node] = true
		}
		inPlace := t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeSoaking
		if t.From != v1alpha1.NodePending || (t.To != v1alpha1.NodeInstalling && !inPlace) {
			continue
		}
		starts++
		n := before[t.Node]
		isCanary := slices.Contains(canary, t.Node)
		if inPlace {
			// A canary node the operator upgraded before its hold landed
			// soaks where it is: a start like a release, but held.
			st := n.Labels[v1alpha1.LabelOperatorUpgradeState]
			switch {
			case !isCanary:
				c.fail(s.At, "%s: soaked in place but is no canary node", t.Node)
			case t.Release:
				c.fail(s.At, "%s: soaked in place but released to the operator", t.Node)
			case !planner.DriverMatches(n.DriverVersion, spec.TargetVersion):
				c.fail(s.At, "%s: soaked in place on %q, not on %s", t.Node, n.DriverVersion, spec.TargetVersion)
			case st == v1alpha1.OperatorStateUpgradeRequired || v1alpha1.OperatorUpgrading(st):
				c.fail(s.At, "%s: soaked in place while the operator says %q", t.Node, st)
			}
		} else {
			if !t.Release {
				c.fail(s.At, "%s: started without removing the skip label", t.Node)
			}
			if n.Unschedulable && !t.KeepCordon {
				c.fail(s.At, "%s: a cordoned node released without the operator's initial-state record", t.Node)
			}
			if n.Labels[v1alpha1.LabelOperatorUpgradeState] != v1alpha1.OperatorStateUpgradeRequired {
				c.fail(s.At, "%s: released while the operator says %q", t.Node, n.Labels[v1alpha1.LabelOperatorUpgradeState])
			}
		}
		if !n.Unschedulable && n.Ready {
			costly++
		}
		switch {
		case spec.Abort || spec.Paused:
			c.fail(s.At, "%s: released while paused or aborted", t.Node)
		case failures > set.FailureBudget:
			c.fail(s.At, "%s: released with %d failures, budget %d", t.Node, failures, set.FailureBudget)
		case !isCanary && !canaryDone:
			c.fail(s.At, "%s: released before the canary %v was done", t.Node, canary)
		case !isCanary && len(canary) > 0 && spec.Approval != ro.Name && !spec.Canary.AutoApproveAfterSoak:
			c.fail(s.At, "%s: released past the canary without the approval naming %s", t.Node, ro.Name)
		}
		if ok, why := cal.Allowed(s.At); !ok {
			c.fail(s.At, "%s: released outside a window or in a freeze: %s", t.Node, why)
		}
	}
	if starts > 0 && flying > set.Parallel {
		c.fail(s.At, "%d in flight or upgrading after releasing %d, parallelNodes %d", flying, starts, set.Parallel)
	}
	if costly > 0 && unavailable > maxUnavailable {
		c.fail(s.At, "%d unavailable after releasing %d available nodes, maxUnavailable %d", unavailable, costly, maxUnavailable)
	}
	for i := range s.After {
		n := &s.After[i]
		if !selected(n) || n.Owner != "" && n.Owner != ro.Name {
			continue
		}
		st := n.Labels[v1alpha1.LabelOperatorUpgradeState]
		// A pass cut short by a conflict (the operator wrote the node
		// meanwhile) holds it on the next one.
		if !planner.OperatorReleased(n.Phase) && !skip(n) && s.Refused == 0 {
			c.fail(s.At, "%s: %s without the skip label after the pass", n.Name, n.Phase.OrPending())
		}
		if !c.released[n.Name] && !c.unheld[n.Name] && v1alpha1.OperatorUpgrading(st) {
			c.fail(s.At, "%s: the operator took it to %s but the rollout never released it", n.Name, st)
		}
	}
}

// final: a node with a health signal in its soak never ends Done, and the
// run ends somewhere it can rest.
func (c *operatorChecker) final(res *sim.Result) {
	for _, n := range res.Nodes {
		from, soaked := c.soakFrom[n.Name]
		end, done := c.done[n.Name]
		if !soaked || !done {
			continue
		}
		for _, s := range n.Signals {
			if !s.At.Before(from) && !s.At.After(end) {
				c.fail(end, "%s: Done although %s at %s during its soak", n.Name, s.Reason, s.At.UTC().Format(time.TimeOnly))
			}
		}
	}
}

func runOperatorChecked(cfg sim.Hooked) (*sim.Result, []string) {
	c := newOperatorChecker(cfg.Config)
	cfg.Observe = c.step
	res, err := sim.RunHooked(cfg)
	if err != nil {
		return nil, append(c.violations, err.Error())
	}
	if res.HitHorizon {
		return res, append(c.violations, "did not converge within the horizon")
	}
	c.final(res)
	for _, l := range res.OperatorLiftedAdminCordons() {
		c.violations = append(c.violations, "the operator lifted an admin's cordon: "+l)
	}
	return res, c.violations
}

// TestOperatorInvariantsRandomized runs the gpu-operator actuator against
// the operator model over random configurations, a third of them with GPU
// jobs on the nodes, and checks its rules at every step.
func TestOperatorInvariantsRandomized(t *testing.T) {
	n := seeds(t)
	phases := map[v1alpha1.RolloutPhase]int{}
	quarantinedBySignal, keptCordons, releasedAll := 0, 0, 0
	for seed := range uint64(n) {
		cfg := sim.Hooked{Config: randomOperatorConfig(seed)}
		if seed%3 == 0 {
			// GPU jobs on the nodes: the releases go cheapest first.
			cfg = withWorkload(cfg, seed)
		}
		res, v := runOperatorChecked(cfg)
		if len(v) > 0 {
			t.Fatalf("seed %d: %d violations, first: %s", seed, len(v), v[0])
		}
		phases[res.Phase]++
		for _, nd := range res.Nodes {
			if nd.Phase == v1alpha1.NodeQuarantined && len(nd.Signals) > 0 {
				quarantinedBySignal++
			}
			if nd.AdminCordoned && nd.Phase == v1alpha1.NodeDone {
				keptCordons++
			}
		}
		if res.Status.Nodes.Done == res.Status.Total {
			releasedAll++
		}
	}
	for _, p := range []v1alpha1.RolloutPhase{v1alpha1.PhaseCompleted, v1alpha1.PhaseStalled, v1alpha1.PhaseAborted, v1alpha1.PhaseWaitingForApproval} {
		if phases[p] == 0 && n >= 200 {
			t.Errorf("no run ended %s: %v", p, phases)
		}
	}
	if n >= 200 && (quarantinedBySignal == 0 || keptCordons == 0) {
		t.Errorf("the runs reached too little: %d nodes quarantined by a soak signal, %d admin-cordoned nodes upgraded", quarantinedBySignal, keptCordons)
	}
	t.Logf("%d runs: %v; %d quarantined by a soak signal, %d admin-cordoned nodes upgraded and left cordoned, %d runs with every node Done",
		n, phases, quarantinedBySignal, keptCordons, releasedAll)
}

// TestOperatorInvariantsCatchBrokenPlanners proves the checks can fail:
// each broken planner drops one of the path's rules, and the checker must
// notice on some seed.
func TestOperatorInvariantsCatchBrokenPlanners(t *testing.T) {
	lie := func(edit func(*v1alpha1.DriverRolloutSpec)) sim.PlanFunc {
		return func(s planner.Snapshot, now time.Time) planner.Result {
			ro := s.Rollout.DeepCopy()
			edit(&ro.Spec)
			s.Rollout = ro
			return planner.Plan(s, now)
		}
	}
	drop := func(keep func(planner.Transition) bool) sim.PlanFunc {
		return func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			r.Transitions = slices.DeleteFunc(r.Transitions, func(t planner.Transition) bool { return !keep(t) })
			return r
		}
	}
	for _, tt := range []struct {
		name string
		plan sim.PlanFunc
	}{
		{"approves by itself", lie(func(s *v1alpha1.DriverRolloutSpec) { s.Canary.AutoApproveAfterSoak = true })},
		{"ignores windows and freezes", lie(func(s *v1alpha1.DriverRolloutSpec) { s.Windows, s.Freezes = nil, nil })},
		{"ignores the budget", lie(func(s *v1alpha1.DriverRolloutSpec) { s.FailureBudget = 1000 })},
		{"ignores maxUnavailable", lie(func(s *v1alpha1.DriverRolloutSpec) { v := intstr.FromString("100%"); s.MaxUnavailable = &v })},
		{"never holds", drop(func(t planner.Transition) bool { return !(t.Hold && t.From == t.To) })},
		{"drops the cordon record", func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				r.Transitions[i].KeepCordon = false
			}
			return r
		}},
		{"ignores soak signals", func(s planner.Snapshot, now time.Time) planner.Result {
			for i := range s.Nodes {
				s.Nodes[i].Signals = nil
			}
			return planner.Plan(s, now)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(400) {
				cfg := sim.Hooked{Config: randomOperatorConfig(seed)}
				cfg.Plan = tt.plan
				if _, v := runOperatorChecked(cfg); len(v) > 0 {
					t.Logf("seed %d: %s", seed, v[0])
					return
				}
			}
			t.Errorf("no violation found in 400 runs")
		})
	}
}
