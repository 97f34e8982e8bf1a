package rehearse

import (
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// BenchmarkSimulate is `gpufleet simulate` at the sizes fleets have, as the
// command runs it (each cluster's policy from the fleet file, jobs on 85%
// of the GPUs, a few failed installs and XIDs):
//
//   - clusters=500: every cluster of a synthetic fleet of 500 (4 GPU pools,
//     34 nodes each), one rollout after another, as `gpufleet simulate`
//     without --cluster does;
//   - nodes=5000: one staging cluster (no maintenance window) simulated with 5,000 GPU nodes
//     (`--cluster C --nodes 5000`), the largest single cluster the
//     toolkit is sized for.
//
// The figures are in docs/performance.md ("simulate at fleet sizes").
func BenchmarkSimulate(b *testing.B) {
	f, err := fleet.Parse("fleet.toml", fleettest.Fleet(b, fleettest.Options{Clusters: 500}))
	if err != nil {
		b.Fatal(err)
	}
	base := Options{Fleet: f, FleetFile: "fleet.toml", Release: fleettest.Next, Seed: 1, Start: start,
		FailRate: 0.001, FailRateSet: true, XIDRate: 0.001, Utilization: 0.85}
	for _, tt := range []struct {
		name    string
		cluster string
		nodes   int
	}{
		{"clusters=500", "", 0},
		{"nodes=5000", fleettest.ClusterName(0, 500), 5000},
	} {
		b.Run(tt.name, func(b *testing.B) {
			o := base
			o.Cluster, o.Nodes = tt.cluster, tt.nodes
			b.ReportAllocs()
			defer fleettest.CPUTime(b)()
			var passes int
			for b.Loop() {
				all, err := o.Run(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				if err := Unfinished(all); err != nil {
					b.Fatal(err)
				}
				passes = 0
				for _, r := range all {
					passes += r.Result().Steps
				}
			}
			b.ReportMetric(float64(passes), "passes")
		})
	}
}
