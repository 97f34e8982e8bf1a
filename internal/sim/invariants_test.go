package sim_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

// seeds is how many random rollouts TestInvariants runs: 1,000 by default
// (a few seconds), more with GPUFLEET_SIM_SEEDS (make soak-sim).
func seeds(t *testing.T) int {
	n := 1000
	if v := os.Getenv("GPUFLEET_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GPUFLEET_SIM_SEEDS=%q is not a positive count", v)
		}
	}
	if testing.Short() {
		n = min(n, 200)
	}
	return n
}

// randomPolicy draws the policy both actuators' randomized runs share
// (slots, budget, soak, timeouts, maxUnavailable, canary, approval), in
// one order so that each seed draws the same policy it always did.
func randomPolicy(r *rand.Rand, name string) *pt.RolloutBuilder {
	b := pt.Rollout(name).
		Parallel(int32(1+r.IntN(5))).
		Budget(int32(r.IntN(4))).
		Soak(time.Duration(5+r.IntN(60))*time.Minute).
		Timeouts(time.Duration(5+r.IntN(30))*time.Minute, time.Duration(5+r.IntN(20))*time.Minute, time.Duration(2+r.IntN(10))*time.Minute).
		OutOfService("gpufleet.io/remediation", "true")
	if r.IntN(3) == 0 {
		b.MaxUnavailablePercent(fmt.Sprintf("%d%%", 1+r.IntN(60)))
	} else {
		b.MaxUnavailable(int32(1 + r.IntN(5)))
	}
	switch r.IntN(3) {
	case 0:
		b.Canary(int32(1 + r.IntN(2)))
	case 1:
		b.CanaryNodes("gpu-01")
	}
	if r.IntN(3) == 0 {
		b.AutoApprove()
	}
	return b
}

// randomConfig draws a small rollout with everything that can go wrong:
// failing installs and rollbacks, XIDs, wrong versions, nodes going
// NotReady, admins cordoning, windows, freezes, remediation labels, and a
// script of approvals (right and wrong), pauses and aborts.
func randomConfig(seed uint64) sim.Hooked { return randomConfigWith(seed, false) }

// randomConfigWith is randomConfig, moving OFED too in a third of the
// configurations when ofed is set (addOFED). The invariant tests set it
// (with maintenance domains it found a domain returned while a node of it
// still waited for its OFED); the lower bound's test does not, as the
// bound counts no OFED time.
func randomConfigWith(seed uint64, ofed bool) sim.Hooked {
	r := rand.New(rand.NewPCG(seed, 42))
	name := "r" + strconv.FormatUint(seed, 10)
	b := randomPolicy(r, name)
	if r.IntN(2) == 0 {
		tz := []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"}[r.IntN(4)]
		start := r.IntN(24)
		end := (start + 2 + r.IntN(20)) % 24
		var days []v1alpha1.Weekday
		if r.IntN(2) == 0 {
			days = []v1alpha1.Weekday{v1alpha1.Monday, v1alpha1.Wednesday, v1alpha1.Friday, v1alpha1.Saturday}
		}
		b.Window(fmt.Sprintf("%02d:00", start), fmt.Sprintf("%02d:30", end), tz, days...)
	}
	if r.IntN(3) == 0 {
		from := monday.Add(time.Duration(r.IntN(48)) * time.Hour)
		b.Freeze(from, from.Add(time.Duration(1+r.IntN(36))*time.Hour), "random freeze")
	}
	ro := b.Build()

	n := 3 + r.IntN(28)
	nodes := pt.Nodes("gpu", n)
	for i := range nodes {
		switch r.IntN(12) {
		case 0:
			nodes[i].Unschedulable = true // cordoned by an admin before the rollout
		case 1:
			nodes[i].Ready = false
		case 2:
			nodes[i].Labels = map[string]string{v1alpha1.LabelPool: "a100"} // not selected
		}
	}
	prof := sim.DefaultProfile()
	prof.InstallFailRate = r.Float64() * 0.3
	prof.WrongVersionRate = r.Float64() * 0.05
	prof.XIDRate = r.Float64() * 0.2
	prof.RollbackFailRate = r.Float64() * 0.5
	prof.NotReadyRate = r.Float64() * 0.3
	prof.AdminCordonRate = r.Float64() * 0.2

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
	// Ready nodes come back eventually, so runs converge.
	for _, nd := range nodes {
		if !nd.Ready {
			script = append(script, sim.Event{At: at(), Do: func(w *sim.World) { w.SetReady(nd.Name, true) }})
		}
	}
	cfg := sim.Hooked{Config: sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: seed, Profile: prof, Script: script}}
	if ofed {
		addOFED(seed, &cfg.Config) // before the rivals: they move the same OFED
	}
	addRivals(seed, &cfg)
	addJoiners(seed, &cfg.Config)
	return cfg
}

// runChecked runs cfg under the checker and returns what it found.
func runChecked(t *testing.T, cfg sim.Hooked) []string {
	t.Helper()
	check := simcheck.NewChecker()
	cfg.Observe = check.Step
	res, err := sim.RunHooked(cfg)
	if err != nil {
		// What broke on the way says more than the non-convergence.
		return append(check.Violations(), err.Error())
	}
	if res.HitHorizon {
		return append(check.Violations(), "did not converge within the horizon")
	}
	finalAll(check, res)
	return check.Violations()
}

// mustHoldInvariants runs cfg, the random configuration of seed, under the
// checker (and observe), and fails the test at the first invariant broken
// or when the run does not converge.
func mustHoldInvariants(t *testing.T, seed uint64, cfg sim.Hooked, observe ...func(sim.Step)) *sim.Result {
	t.Helper()
	check := simcheck.NewChecker()
	cfg.Observe = tee(append([]func(sim.Step){check.Step}, observe...)...)
	res, err := sim.RunHooked(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if res.HitHorizon {
		t.Fatalf("seed %d: did not converge within the horizon (phase %s)", seed, res.Phase)
	}
	finalAll(check, res)
	if v := check.Violations(); len(v) > 0 {
		t.Fatalf("seed %d: %d invariant violations, first: %s", seed, len(v), v[0])
	}
	return res
}

func TestInvariantsRandomized(t *testing.T) {
	n := seeds(t)
	phases := map[v1alpha1.RolloutPhase]int{}
	var cov coverage
	var joins joinCoverage
	var ofed ofedCoverage
	racing, rivals := 0, 0
	for seed := range uint64(n) {
		cfg := randomConfigWith(seed, true)
		if cfg.Racing {
			racing++
		}
		if len(cfg.Script) > 0 {
			rivals++
		}
		res := mustHoldInvariants(t, seed, cfg, cov.observe, joins.observe, ofed.observe)
		phases[res.Phase]++
	}
	// The random configurations must reach every way a rollout ends, and
	// what issue 16 found (overlapping rollouts, racing passes, deleted
	// rollouts, cordoned nodes settled Done), or the invariants were only
	// checked on easy runs.
	for _, p := range []v1alpha1.RolloutPhase{v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithFailures, v1alpha1.PhaseStalled, v1alpha1.PhaseAborted, v1alpha1.PhaseWaitingForApproval} {
		if phases[p] == 0 && n >= 200 {
			t.Errorf("no run ended %s: %v", p, phases)
		}
	}
	if n >= 200 && (cov.overlaps == 0 || cov.refused == 0 || cov.released == 0 || cov.settledCordoned == 0) {
		t.Errorf("the runs reached too little: %+v", cov)
	}
	if n >= 200 && (joins.joinedTarget == 0 || joins.joinedPrevious == 0 || joins.joinedRunning == 0) {
		t.Errorf("the joining nodes reached too little: %+v", joins)
	}
	ofed.check(t, n)
	t.Logf("OFED: %+v", ofed)
	t.Logf("%d runs (%d racing): %v; steps reporting an overlap %d, writes refused on a precondition %d, nodes released by a deletion %d, cordoned nodes settled Done %d; joins %+v",
		n, racing, phases, cov.overlaps, cov.refused, cov.released, cov.settledCordoned, joins)
}

// TestInvariantsCatchBrokenPlanners proves the checks can fail: each broken
// planner hides one rule from the real planner (by lying to it about the
// spec, or by dropping part of its output), and the checker must notice.
func TestInvariantsCatchBrokenPlanners(t *testing.T) {
	lie := func(edit func(*v1alpha1.DriverRolloutSpec)) sim.PlanFunc {
		return func(s planner.Snapshot, now time.Time) planner.Result {
			ro := s.Rollout.DeepCopy()
			edit(&ro.Spec)
			s.Rollout = ro
			return planner.Plan(s, now)
		}
	}
	drop := func(edit func(*planner.Transition)) sim.PlanFunc {
		return func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				edit(&r.Transitions[i])
			}
			return r
		}
	}
	hundred := intstr.FromInt32(100)
	failing := steady()
	failing.InstallFailRate = 1
	base := func() sim.Config {
		return sim.Config{Nodes: pt.Nodes("gpu", 6), Start: monday, Profile: steady()}
	}
	tests := []struct {
		name string
		cfg  func() sim.Config
		plan sim.PlanFunc
	}{
		{"ignores maxUnavailable", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Parallel(4).MaxUnavailable(1).Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.MaxUnavailable = &hundred })},
		{"ignores parallelNodes", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Parallel(1).MaxUnavailable(6).Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.ParallelNodes = 6 })},
		{"ignores windows", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Window("22:00", "23:00", "UTC").Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.Windows = nil })},
		{"ignores freezes", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Freeze(monday, monday.Add(time.Hour), "x").Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.Freezes = nil })},
		{"ignores approval", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Canary(1).Approval("wrong").Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.Approval = "r" })},
		{"ignores pause", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Paused().Build()
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.Paused = false })},
		{"ignores the budget", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Budget(0).Build()
			c.Profile = failing
			return c
		}, lie(func(s *v1alpha1.DriverRolloutSpec) { s.FailureBudget = 100 })},
		{"never uncordons", func() sim.Config {
			c := base()
			c.Rollout = pt.Rollout("r").Build()
			return c
		}, drop(func(t *planner.Transition) { t.Uncordon = false })},
		{"forgets the admin's cordon", func() sim.Config {
			c := base()
			c.Nodes[2].Unschedulable = true
			c.Rollout = pt.Rollout("r").Build()
			return c
		}, drop(func(t *planner.Transition) { t.RecordAdminCordon = false })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.Hooked{Config: tt.cfg()}
			if v := runChecked(t, cfg); len(v) > 0 {
				t.Fatalf("the real planner breaks the invariants on this case: %v", v)
			}
			cfg.Plan = tt.plan
			if v := runChecked(t, cfg); len(v) == 0 {
				t.Errorf("a planner that %s passed every invariant", tt.name)
			} else {
				t.Logf("caught: %s", v[0])
			}
		})
	}
	for _, tt := range append(append(rivalBreaks(), joinBreaks()...), ofedBreaks()...) {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			if v := runChecked(t, cfg); len(v) > 0 {
				t.Fatalf("the real planner breaks the invariants on this case: %v", v)
			}
			cfg = tt.cfg()
			tt.brk(&cfg)
			if v := runChecked(t, cfg); len(v) == 0 {
				t.Errorf("a world that %s passed every invariant", tt.name)
			} else {
				t.Logf("caught: %s", v[0])
			}
		})
	}
}
