package sim_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// TestLowerBoundNeverExceedsMakespan: whatever the policy, windows,
// freezes, durations and failures, no run is faster than its lower bound.
// (Without the scripted events of the invariant runs: those change the
// spec, the nodes and the rollouts under way, which a bound computed from
// the spec at the start cannot know.)
func TestLowerBoundNeverExceedsMakespan(t *testing.T) {
	for seed := range uint64(300) {
		cfg := randomConfig(seed)
		cfg.Script = nil
		cfg.ApproveWhenAsked = seed%2 == 0 // past the canary, half the time
		res, err := sim.RunHooked(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep := sim.Summarise(cfg.Rollout, res)
		if time.Duration(rep.LowerBound) > res.Makespan {
			t.Errorf("seed %d: lower bound %s over the makespan %s (%d done)", seed, time.Duration(rep.LowerBound), res.Makespan, rep.Done)
		}
	}
}

// TestLowerBoundWaitsForTheWindow: a rollout created outside its window
// cannot start before the window opens, nor go on while it is shut, and
// its lower bound says so: a schedule that uses every open minute is
// close to it, not a third of it.
func TestLowerBoundWaitsForTheWindow(t *testing.T) {
	// Created on a Monday at 10:00; nodes may start Tue–Thu 22:00–02:00 UTC.
	ro := pt.Rollout("r").Canary(1).AutoApprove().Parallel(2).MaxUnavailable(2).
		Window("22:00", "02:00", "UTC", v1alpha1.Tuesday, v1alpha1.Wednesday, v1alpha1.Thursday).Build()
	nodes := sim.Nodes(12, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	res, err := sim.Run(sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 1, Profile: steady(), Tick: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rep := sim.Summarise(ro, res)
	lb := time.Duration(rep.LowerBound)
	firstOpen := time.Date(2026, 6, 2, 22, 0, 0, 0, time.UTC).Sub(monday)
	// 1 canary node, then 11 over 2 slots, 46 minutes each: 6 rounds of
	// starts, 5 minutes apart at best... at least one window's worth of
	// starts; the plain bound (no windows) would be about 5 hours.
	if lb < firstOpen+46*time.Minute {
		t.Errorf("lower bound %s: before the window opens (%s) and the canary's 46 minutes", lb, firstOpen)
	}
	if lb > res.Makespan {
		t.Errorf("lower bound %s over the makespan %s", lb, res.Makespan)
	}
	if rep.Efficiency < 0.8 {
		t.Errorf("efficiency %.2f (lower bound %s, makespan %s): the schedule uses the windows, the bound should know them", rep.Efficiency, lb, res.Makespan)
	}
	t.Logf("makespan %s, lower bound %s, efficiency %.2f", res.Makespan, lb, rep.Efficiency)
}

// TestLowerBoundWithoutWindowsIsTheSpread: with no window or freeze the
// bound is the canary then the rest shared over the slots, as before.
func TestLowerBoundWithoutWindowsIsTheSpread(t *testing.T) {
	ro := pt.Rollout("r").Canary(1).AutoApprove().Parallel(3).MaxUnavailable(3).Build()
	nodes := sim.Nodes(10, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	res, err := sim.Run(sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 1, Profile: steady()})
	if err != nil {
		t.Fatal(err)
	}
	// Every node 5m + 10m + 1m + 30m = 46m: the canary, then 9 over 3 slots.
	if got, want := time.Duration(sim.Summarise(ro, res).LowerBound), 46*time.Minute+3*46*time.Minute; got != want {
		t.Errorf("lower bound %s, want %s", got, want)
	}
}
