package sim_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// addOFED makes a third of the random configurations move the OFED driver
// too (spec.ofed), with or without GPUDirect RDMA: most a release of both
// drivers, some of OFED alone (the GPU target the previous driver), some
// of the GPU driver alone with OFED unchanged; some with an OFED version
// that never comes up, and some whose release is reverted in Git after a
// while (the NicClusterPolicy names the previous OFED again, and the
// rollout is aborted). It draws from its own generator, so the rest of
// the configuration is what it was before OFED existed.
func addOFED(seed uint64, cfg *sim.Config) {
	r := rand.New(rand.NewPCG(seed, 32))
	if r.IntN(3) != 0 {
		return
	}
	ro := cfg.Rollout
	ro.Spec.OFED = &v1alpha1.OFEDSpec{TargetVersion: pt.OFEDTarget, PreviousVersion: pt.OFEDPrevious, Peermem: r.IntN(2) == 0}
	switch r.IntN(5) {
	case 0: // OFED alone
		ro.Spec.TargetVersion = ro.Spec.PreviousVersion
	case 1: // the GPU driver alone
		ro.Spec.OFED.PreviousVersion = pt.OFEDTarget
	}
	sim.RunOFED(cfg.Nodes, ro.Spec.OFED.PreviousVersion)
	if r.IntN(4) == 0 {
		cfg.Profile.BadOFED = pt.OFEDTarget
	}
	cfg.Profile.OFEDInstall = sim.Dist{Median: time.Duration(2+r.IntN(10)) * time.Minute, Spread: 0.4}
	// A revert comes at any time in two days; with a bad OFED more often,
	// and within the hour, while its canary still waits, rolling back, for
	// the previous OFED: the one way a node's OFED goes back.
	revert, within := r.IntN(4) == 0, 48*60
	if cfg.Profile.BadOFED != "" {
		revert, within = r.IntN(2) == 0, 60
	}
	if revert {
		at := time.Duration(r.IntN(within)) * time.Minute
		previous := ro.Spec.OFED.PreviousVersion
		cfg.Script = append(cfg.Script, sim.Event{At: at, What: "release reverted in Git", Do: func(w *sim.World) {
			w.SetOFEDPolicy(previous)
			w.Rollout().Spec.Abort = true
		}})
	}
}

// ofedCoverage counts what the OFED runs reached, so a generator that
// stopped producing OFED upgrades, driver restarts, reverts or failed
// OFED is noticed.
type ofedCoverage struct {
	pods, released, restarted, failed, rolledBackOFED int
}

func (c *ofedCoverage) observe(s sim.Step) {
	c.pods += len(s.OFEDPods)
	for _, p := range s.OFEDPods {
		if p.Phase == v1alpha1.NodeRollingBack {
			c.rolledBackOFED++
		}
	}
	if s.Rollout == nil || s.Rollout.Spec.OFED == nil {
		return
	}
	for _, t := range s.Result.Transitions {
		switch {
		case t.ReleaseOFED:
			c.released++
		case t.RestartDriver:
			c.restarted++
		}
		if t.Failure && strings.Contains(t.Reason, "OFED") {
			c.failed++
		}
	}
}

func (c *ofedCoverage) check(t *testing.T, n int) {
	t.Helper()
	if n >= 200 && (c.pods == 0 || c.released == 0 || c.restarted == 0 || c.failed == 0 || c.rolledBackOFED == 0) {
		t.Errorf("the OFED runs reached too little: %+v", *c)
	}
}

// ofedBreaks are broken planners for TestInvariantsCatchBrokenPlanners
// that each change the real one's output in one OFED rule.
func ofedBreaks() []struct {
	name string
	cfg  func() sim.Hooked
	brk  func(*sim.Hooked)
} {
	edit := func(fn func(*planner.Transition)) func(*sim.Hooked) {
		return func(h *sim.Hooked) {
			h.Plan = func(s planner.Snapshot, now time.Time) planner.Result {
				r := planner.Plan(s, now)
				for i := range r.Transitions {
					fn(&r.Transitions[i])
				}
				return r
			}
		}
	}
	cfg := func(ofedTarget string) func() sim.Hooked {
		return func() sim.Hooked {
			ro := pt.Rollout("r").OFED(true).OFEDVersions(ofedTarget, pt.OFEDPrevious).Parallel(2).MaxUnavailable(2).Build()
			return sim.Hooked{Config: sim.Config{Rollout: ro, Nodes: ofedNodes(4, pt.Previous), Start: monday, Profile: steady()}}
		}
	}
	return []struct {
		name string
		cfg  func() sim.Hooked
		brk  func(*sim.Hooked)
	}{
		{"never holds OFED", cfg(pt.OFEDTarget), edit(func(t *planner.Transition) { t.HoldOFED = false })},
		{"flips the driver label with the OFED release", cfg(pt.OFEDTarget), edit(func(t *planner.Transition) {
			if t.ReleaseOFED {
				t.Driver = pt.Target
			}
		})},
		{"releases the hold of an unchanged OFED", cfg(pt.OFEDPrevious), edit(func(t *planner.Transition) {
			if t.From == v1alpha1.NodeDraining && t.To == v1alpha1.NodeInstalling {
				t.ReleaseOFED = true
			}
		})},
		{"uncordons with the OFED release", cfg(pt.OFEDTarget), edit(func(t *planner.Transition) {
			if t.ReleaseOFED {
				t.Uncordon = true
			}
		})},
	}
}
