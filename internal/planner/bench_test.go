package planner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// BenchmarkPlan10000Nodes is one planning pass over a 10,000-node pool in
// the middle of a rollout: a third done, 100 in flight in every phase, the
// rest pending, some cordoned or NotReady. Target: under 10 ms.
func BenchmarkPlan10000Nodes(b *testing.B) {
	ro := pt.Rollout("r").Canary(1).Approved().Parallel(100).MaxUnavailablePercent("5%").
		Window("00:00", "23:59", "Europe/Paris").OutOfService("remediation", "true").Build()
	flying := []v1alpha1.NodePhase{v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating, v1alpha1.NodeSoaking}
	nodes := make([]planner.Node, 10000)
	for i := range nodes {
		nb := pt.Node(fmt.Sprintf("gpu-%05d", i))
		switch {
		case i < 3300:
			nb.In(v1alpha1.NodeDone, now.Add(-time.Hour)).Driver(true, pt.Target)
		case i < 3400:
			nb.In(flying[i%4], now.Add(-time.Minute))
		case i%97 == 0:
			nb.Cordoned()
		case i%89 == 0:
			nb.NotReady()
		}
		nodes[i] = nb.Build()
	}
	snap := planner.Snapshot{Rollout: ro, Nodes: nodes}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		planner.Plan(snap, now)
	}
}
