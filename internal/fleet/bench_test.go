package fleet_test

import (
	"fmt"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// benchSizes are the fleet sizes every fleet-scale benchmark runs at, so
// that growth from one to the next can be read against linear.
var benchSizes = []int{500, 2000, 5000}

// BenchmarkLoad parses and validates synthetic fleets (clusters × 4 pools,
// waves of 50, the example's serving stack). Target: 5,000 clusters under
// 0.3 s, linear in clusters.
func BenchmarkLoad(b *testing.B) {
	for _, n := range benchSizes {
		src := fleettest.Fleet(b, fleettest.Options{Clusters: n})
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			defer fleettest.CPUTime(b)()
			for b.Loop() {
				if _, err := fleet.Parse("fleet.toml", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
