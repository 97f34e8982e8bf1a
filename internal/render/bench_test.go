package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// syntheticFleet writes a fleet file with n clusters of 4 GPU pools each,
// in waves of 50, mid-rollout so that half the clusters carry two drivers.
func syntheticFleet(n int) []byte {
	var b strings.Builder
	b.WriteString(`
[releases.r1]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "570.172.08"
[releases.r2]
gpu-operator = "v25.10.1"
network-operator = "v25.10.0"
driver = "580.95.05"
[policy]
parallel-nodes = 2
max-unavailable = "10%"
[policy.environments.prod]
soak = "2h"
[[policy.environments.prod.windows]]
days = ["Tue", "Wed"]
start = "22:00"
end = "04:00"
time-zone = "UTC"
`)
	products := []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-H200", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S"}
	for i := 0; i < n; i++ {
		env := "prod"
		if i < n/10 {
			env = "staging"
		}
		fmt.Fprintf(&b, "[clusters.c%04d]\nenvironment = %q\n", i, env)
		for p := 0; p < 4; p++ {
			fmt.Fprintf(&b, "[[clusters.c%04d.pools]]\nname = \"pool%d\"\nproduct = %q\nnodes = %d\n", i, p, products[p], 8+p*4)
		}
	}
	for w := 0; w*50 < n; w++ {
		var names []string
		for i := w * 50; i < min(n, (w+1)*50); i++ {
			names = append(names, fmt.Sprintf("%q", fmt.Sprintf("c%04d", i)))
		}
		fmt.Fprintf(&b, "[[waves]]\nname = \"w%d\"\nclusters = [%s]\n", w, strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "[promotion]\nstable = \"r1\"\nrollout = { release = \"r2\", wave = \"w%d\" }\n", (n/50)/2)
	return []byte(b.String())
}

// BenchmarkRender renders synthetic fleets of growing size; the target is
// under 2 s for 500 clusters × 4 pools, growing linearly with clusters.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{50, 500} {
		src := syntheticFleet(n)
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			var files int
			for b.Loop() {
				f, err := fleet.Parse("fleet.toml", src)
				if err != nil {
					b.Fatal(err)
				}
				out, err := Render(f)
				if err != nil {
					b.Fatal(err)
				}
				files = len(out.Files)
			}
			b.ReportMetric(float64(files), "files")
		})
	}
}

func TestSyntheticFleetIsValid(t *testing.T) {
	if _, err := fleet.Parse("fleet.toml", syntheticFleet(120)); err != nil {
		t.Fatal(err)
	}
}
