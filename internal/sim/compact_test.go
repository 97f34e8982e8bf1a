package sim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufleet/gpufleet/internal/sim"
)

// TestCompactSimulatesTheSame runs random rollouts twice, once as the
// simulator runs them for people (the planner handed compacted snapshots,
// planner.Compact) and once observed (every pass planned from every node,
// as an observer needs them), and wants the same run: transcript,
// timeline, phases, final nodes, statuses and, a third of them running GPU
// jobs, the work destroyed. Half the rollouts drop the
// outOfService selector, which keeps Compact away; the test wants many
// compacted passes, or it proves nothing.
func TestCompactSimulatesTheSame(t *testing.T) {
	operator := func(seed uint64) sim.Hooked { return sim.Hooked{Config: randomOperatorConfig(seed)} }
	for name, random := range map[string]func(uint64) sim.Hooked{"gpufleet": randomConfig, "gpu-operator": operator} {
		t.Run(name, func(t *testing.T) { compactSimulatesTheSame(t, random) })
	}
}

func compactSimulatesTheSame(t *testing.T, random func(uint64) sim.Hooked) {
	n := seeds(t)
	compacted, runs := 0, 0
	for seed := range uint64(n) {
		build := func() sim.Hooked {
			cfg := random(seed)
			if seed%2 == 0 {
				cfg.Rollout.Spec.OutOfService = nil
			}
			if seed%3 == 0 {
				// GPU jobs: the passes start the cheapest nodes first.
				cfg = withWorkload(cfg, seed)
			}
			cfg.Record = true
			return cfg
		}
		fast, err := sim.RunHooked(build())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		full := build()
		full.Observe = func(sim.Step) {}
		whole, err := sim.RunHooked(full)
		if err != nil {
			t.Fatalf("seed %d, observed: %v", seed, err)
		}
		if sim.CompactedPasses(whole) != 0 {
			t.Fatalf("seed %d: an observed run planned from compacted snapshots", seed)
		}
		if c := sim.CompactedPasses(fast); c > 0 {
			compacted += c
			runs++
		}
		if d := cmp.Diff(whole, fast, cmpopts.IgnoreUnexported(sim.Result{}), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("seed %d: the compacted run differs (-every node +compacted):\n%s", seed, d)
		}
	}
	if runs < n/10 || compacted < 10*runs {
		t.Fatalf("%d passes of %d runs out of %d compacted: too few to prove anything", compacted, runs, n)
	}
	t.Logf("%d compacted passes in %d of %d runs", compacted, runs, n)
}
