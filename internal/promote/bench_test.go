package promote

import (
	"fmt"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// BenchmarkPlanStart is `gpufleet plan start R` over synthetic fleets at
// rest (clusters × 4 pools, waves of 50, the example's serving stack):
// load the fleet file, then compute the step, the edited file and what it
// changes. Targets at 5,000 clusters: under 5 s and 300 MB (B/op counts
// every byte allocated, so it bounds the peak), within 1.2× of linear
// from 500. peak-heap-MB is the most heap the run held at once.
func BenchmarkPlanStart(b *testing.B) {
	for _, n := range []int{500, 2000, 5000} {
		src := fleettest.Fleet(b, fleettest.Options{Clusters: n})
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var changed int
			peak := fleettest.SamplePeakHeap()
			defer fleettest.CPUTime(b)()
			for b.Loop() {
				f, err := fleet.Parse("fleet.toml", src)
				if err != nil {
					b.Fatal(err)
				}
				p, err := MakePlan(f, func(f *fleet.Fleet) (Step, error) { return Start(f, fleettest.Next) }, nil)
				if err != nil {
					b.Fatal(err)
				}
				changed = len(p.Clusters)
			}
			b.ReportMetric(float64(changed), "clusters-changed")
			b.ReportMetric(peak()/1e6, "peak-heap-MB")
		})
	}
}
