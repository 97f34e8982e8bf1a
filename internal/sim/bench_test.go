package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// BenchmarkRollout5000Nodes simulates a whole rollout over 5,000 nodes with
// random durations and a few failures, the controller acting once a minute
// at most (see sim.Config.Tick). Target: under 5 s.
func BenchmarkRollout5000Nodes(b *testing.B) {
	ro := pt.Rollout("r").Canary(2).AutoApprove().Parallel(50).MaxUnavailablePercent("2%").Budget(100).Build()
	nodes := sim.Nodes(5000, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	bench5000(b, ro, nodes, func(*sim.Result) {})
}

// bench5000 runs ro over nodes as the 5,000-node benchmarks do, checking
// each result with check.
func bench5000(b *testing.B, ro *v1alpha1.DriverRollout, nodes []planner.Node, check func(*sim.Result)) {
	prof := sim.DefaultProfile()
	prof.InstallFailRate, prof.XIDRate = 0.002, 0.002
	b.ReportAllocs()
	defer fleettest.CPUTime(b)()
	for b.Loop() {
		res, err := sim.Run(sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 1, Profile: prof, Tick: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		check(res)
		b.ReportMetric(res.Makespan.Hours(), "sim-hours")
		b.ReportMetric(float64(res.Steps), "steps")
	}
}

// BenchmarkRolloutOFED5000Nodes is BenchmarkRollout5000Nodes for a release
// of both drivers (spec.ofed, GPUDirect RDMA): the Network Operator is
// played per node. It fails unless each node was drained once.
func BenchmarkRolloutOFED5000Nodes(b *testing.B) {
	ro := pt.Rollout("r").OFED(true).Canary(2).AutoApprove().Parallel(50).MaxUnavailablePercent("2%").Budget(100).Build()
	nodes := sim.Nodes(5000, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	sim.RunOFED(nodes, pt.OFEDPrevious)
	bench5000(b, ro, nodes, func(res *sim.Result) {
		for n, d := range res.Drains() {
			if d != 1 {
				b.Fatalf("%s drained %d times", n, d)
			}
		}
	})
}

// BenchmarkRefillVsLockstep compares, on identical random durations, the
// makespan of refilling a slot as soon as a node finishes with classic
// lockstep batches that wait for their slowest node.
func BenchmarkRefillVsLockstep(b *testing.B) {
	ro := pt.Rollout("r").Parallel(10).MaxUnavailable(10).Soak(30 * time.Minute).Build()
	nodes := sim.Nodes(200, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	prof := sim.DefaultProfile()
	prof.Drain = sim.Dist{Median: 5 * time.Minute, Spread: 0.9} // drains have long tails
	var refill, lock time.Duration
	for b.Loop() {
		r1, err := sim.Run(sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 7, Profile: prof})
		if err != nil {
			b.Fatal(err)
		}
		r2, err := sim.RunHooked(sim.Hooked{Config: sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 7, Profile: prof}, Hooks: sim.Hooks{Lockstep: true}})
		if err != nil {
			b.Fatal(err)
		}
		refill, lock = r1.Makespan, r2.Makespan
	}
	b.ReportMetric(refill.Hours(), "refill-hours")
	b.ReportMetric(lock.Hours(), "lockstep-hours")
	b.ReportMetric(lock.Hours()/refill.Hours(), "speedup")
}

// BenchmarkSimulateNodes is `gpufleet simulate --nodes N` as the rehearsal
// runs it (a one-minute controller tick, approval as soon as asked, the
// default profile with a few failures) over a pool of 500 nodes and one of
// 5,000 (the largest cluster gpufleet is sized for), for policies from a
// few nodes at a time in a nightly window to a hundred at once. Every pass
// plans from every node, as the controller's does: the cost of a pass is
// linear in nodes, and the number of passes follows the makespan.
func BenchmarkSimulateNodes(b *testing.B) {
	policies := []struct {
		name string
		ro   func() *v1alpha1.DriverRollout
		// sizes, when set, replaces the node counts below.
		sizes []int
		// jobs runs DefaultWorkload on the nodes, as the rehearsal does
		// unless --utilization 0.
		jobs bool
	}{
		{"parallel=100", func() *v1alpha1.DriverRollout {
			return pt.Rollout("r").Canary(1).Parallel(100).MaxUnavailablePercent("2%").Budget(1000).Build()
		}, nil, false},
		{"parallel=10", func() *v1alpha1.DriverRollout {
			return pt.Rollout("r").Canary(1).Parallel(10).MaxUnavailablePercent("1%").Budget(1000).Build()
		}, nil, false},
		{"parallel=20-window", func() *v1alpha1.DriverRollout {
			return pt.Rollout("r").Canary(1).Parallel(20).MaxUnavailablePercent("1%").Budget(1000).
				Window("22:00", "06:00", "Europe/Berlin", v1alpha1.Tuesday, v1alpha1.Wednesday, v1alpha1.Thursday).Build()
		}, nil, false},
		// The gpu-operator actuator, its nodes held as the rollout before
		// leaves them (and as gpufleet simulate starts them).
		{"parallel=100-gpu-operator", func() *v1alpha1.DriverRollout {
			ro := pt.Rollout("r").Canary(1).Parallel(100).MaxUnavailablePercent("2%").Budget(1000).Build()
			ro.Spec.Actuator = v1alpha1.ActuatorGPUOperator
			return ro
		}, nil, false},
		{"parallel=100-jobs", func() *v1alpha1.DriverRollout {
			return pt.Rollout("r").Canary(1).Parallel(100).MaxUnavailablePercent("2%").Budget(1000).Build()
		}, nil, true},
		{"parallel=10-jobs", func() *v1alpha1.DriverRollout {
			return pt.Rollout("r").Canary(1).Parallel(10).MaxUnavailablePercent("1%").Budget(1000).Build()
		}, []int{5000}, true},
	}
	prof := sim.DefaultProfile()
	prof.InstallFailRate, prof.XIDRate = 0.001, 0.001
	for _, pol := range policies {
		sizes := []int{500, 5000}
		if pol.sizes != nil {
			sizes = pol.sizes
		}
		for _, n := range sizes {
			labels := map[string]string{v1alpha1.LabelPool: pt.Pool}
			if v1alpha1.ActuatorOf(&pol.ro().Spec) == v1alpha1.ActuatorGPUOperator {
				labels[v1alpha1.LabelOperatorUpgradeSkip] = "true"
			}
			nodes := sim.Nodes(n, "gpu", labels, pt.Previous)
			b.Run(fmt.Sprintf("%s/nodes=%d", pol.name, n), func(b *testing.B) {
				b.ReportAllocs()
				defer fleettest.CPUTime(b)()
				for b.Loop() {
					cfg := sim.Config{Rollout: pol.ro(), Nodes: nodes, Start: monday, Seed: 1, Profile: prof, Tick: time.Minute, ApproveWhenAsked: true}
					if pol.jobs {
						cfg.Workload = sim.DefaultWorkload(n, "")
					}
					res, err := sim.Run(cfg)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(res.Makespan.Hours(), "sim-hours")
					b.ReportMetric(float64(res.Steps), "steps")
				}
			})
		}
	}
}

// BenchmarkWorkloadTrace is the GPU work a rollout destroys on a fixed,
// realistic trace (fixedTrace: 64 HGX nodes of 8 GPUs 85% busy with
// DefaultWorkload's jobs, canary 1, 4 nodes at a time, ten seeds), for the
// planner starting the cheapest nodes first against a fixed node order and
// the GPU Operator's upgrade controller's own order, on plain nodes and on
// NVLink domains of four maintained as one. Goal: at most half the
// GPU-hours of the fixed order (destroyed-ratio ≤ 0.5) within 10% of its
// makespan (makespan-ratio ≤ 1.1), and on domains each multi-node job
// interrupted at most once (most-interruptions).
func BenchmarkWorkloadTrace(b *testing.B) {
	for _, domains := range []bool{false, true} {
		b.Run(fmt.Sprintf("domains=%v", domains), func(b *testing.B) {
			var f map[string]*orderFigures
			for b.Loop() {
				f = runTrace(b, 64, domains)
			}
			cost, name, op := f["cost"], f["name"], f["operator"]
			b.ReportMetric(cost.destroyed/traceSeeds, "GPUh-cheapest")
			b.ReportMetric(name.destroyed/traceSeeds, "GPUh-name-order")
			b.ReportMetric(op.destroyed/traceSeeds, "GPUh-operator")
			b.ReportMetric(cost.destroyed/name.destroyed, "destroyed-ratio")
			b.ReportMetric(cost.worst, "makespan-ratio")
			b.ReportMetric(float64(cost.most), "most-interruptions")
			b.ReportMetric(float64(name.most), "most-interruptions-name-order")
			b.ReportMetric(float64(op.most), "most-interruptions-operator")
		})
	}
}
