package render

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// benchSizes are the fleet sizes of the render benchmarks, so that growth
// from one to the next can be read against linear (the target: within
// 1.2× of linear from 500 to 5,000 clusters).
var benchSizes = []int{500, 2000, 5000}

// midRollout is a synthetic fleet of n clusters × 4 pools in waves of 50
// with the example's serving stack, mid-rollout so that about half the
// clusters carry two drivers.
func midRollout(b *testing.B, n int) []byte {
	return fleettest.Fleet(b, fleettest.Options{Clusters: n, Rollout: true})
}

// BenchmarkRender parses and renders in memory: the example fleet, then
// the synthetic ones.
func BenchmarkRender(b *testing.B) {
	example, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, src []byte) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			defer fleettest.CPUTime(b)()
			var files int
			for b.Loop() {
				files = len(renderOnce(b, src).Files)
			}
			b.ReportMetric(float64(files), "files")
		})
	}
	run("example", example)
	for _, n := range benchSizes {
		run(fmt.Sprintf("clusters=%d", n), midRollout(b, n))
	}
}

// BenchmarkRenderWrite is `gpufleet render`: parse, render and write,
// into an empty folder (every file added) and into one already up to date
// (every file read back and compared, none written). Objects are encoded
// by encoding/json and goyaml.v2, not by hand: at 500 clusters that costs
// about a second of CPU more than the hand-written encoders did (figures
// in docs/performance.md), at 5,000 about three times the time.
func BenchmarkRenderWrite(b *testing.B) {
	for _, n := range benchSizes {
		src := midRollout(b, n)
		b.Run(fmt.Sprintf("empty/clusters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer fleettest.CPUTime(b)()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				b.StartTimer()
				changes, err := Write(renderOnce(b, src), dir)
				if err != nil {
					b.Fatal(err)
				}
				if len(changes) == 0 {
					b.Fatal("nothing written into an empty folder")
				}
			}
		})
		b.Run(fmt.Sprintf("up-to-date/clusters=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			if _, err := Write(renderOnce(b, src), dir); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer fleettest.CPUTime(b)()
			for b.Loop() {
				changes, err := Write(renderOnce(b, src), dir)
				if err != nil {
					b.Fatal(err)
				}
				if len(changes) != 0 {
					b.Fatalf("%d changes to an up-to-date folder", len(changes))
				}
			}
		})
	}
}

func renderOnce(b *testing.B, src []byte) *Output {
	f, err := fleet.Parse("fleet.toml", src)
	if err != nil {
		b.Fatal(err)
	}
	out, err := Render(f)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
