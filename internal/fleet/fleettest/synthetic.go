package fleettest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// The example's releases that a synthetic fleet is stable on and rolls out.
const (
	Stable = "r2026-06"
	Next   = "r2026-10"
)

// Options shape a synthetic fleet.
type Options struct {
	// Clusters is how many clusters the fleet has; the first tenth (at
	// least one) are staging, the rest prod.
	Clusters int
	// WaveSize is how many clusters each wave holds (50 when 0).
	WaveSize int
	// Rollout puts Next mid-rollout: it has reached the middle wave, so
	// about half the clusters carry two drivers. Without it the fleet is
	// at rest on Stable and `start Next` is the next step.
	Rollout bool
}

// PoolsPerCluster is how many GPU pools every synthetic cluster has.
const PoolsPerCluster = 4

// pools are every cluster's GPU pools: the example's products, with the
// A100 MIG pool the example's embedders run on.
var pools = [PoolsPerCluster]struct {
	name, product, mig string
	nodes              int
}{
	{"h100", "NVIDIA-H100-80GB-HBM3", "", 16},
	{"h200", "NVIDIA-H200", "", 8},
	{"a100-mig", "NVIDIA-A100-SXM4-80GB", "all-1g.10gb", 6},
	{"a100", "NVIDIA-A100-SXM4-80GB", "", 4},
}

// ClusterName is the name of the i-th synthetic cluster of a fleet of n.
func ClusterName(i, n int) string {
	if i < staging(n) {
		return fmt.Sprintf("stg-%05d", i)
	}
	return fmt.Sprintf("prod-%05d", i)
}

func staging(n int) int { return max(1, n/10) }

// WaveName is the name of the i-th wave.
func WaveName(i int) string { return fmt.Sprintf("wave-%04d", i) }

// Fleet writes a synthetic fleet file: the example fleet file's charts,
// releases, policy and serving stack around o.Clusters clusters of
// PoolsPerCluster pools in waves of o.WaveSize. The example's own clusters,
// waves and promotion are replaced; its one cluster override of the
// policy moves to the first prod cluster.
func Fleet(tb testing.TB, o Options) []byte {
	tb.Helper()
	if o.Clusters < 2 {
		tb.Fatalf("a synthetic fleet needs at least 2 clusters (one staging, one prod), got %d", o.Clusters)
	}
	if o.WaveSize <= 0 {
		o.WaveSize = 50
	}
	example, err := os.ReadFile(filepath.Join(moduleRoot(tb), "examples", "fleet.toml"))
	if err != nil {
		tb.Fatal(err)
	}
	n := o.Clusters
	var head, tail strings.Builder
	for _, s := range sections(string(example)) {
		switch top, _, _ := strings.Cut(s.table, "."); {
		case top == "clusters" || top == "waves" || top == "promotion":
		case strings.HasPrefix(s.table, "policy.clusters."):
			tail.WriteString(strings.Replace(s.text, s.table, "policy.clusters."+ClusterName(staging(n), n), 1))
		case top == "charts" || top == "releases" || s.table == "":
			head.WriteString(s.text)
		default:
			tail.WriteString(s.text)
		}
	}
	var b strings.Builder
	b.Grow(len(example) + n*420)
	b.WriteString(head.String())
	for i := range n {
		name := ClusterName(i, n)
		env := "prod"
		if i < staging(n) {
			env = "staging"
		}
		fmt.Fprintf(&b, "\n[clusters.%s]\nenvironment = %q\ncontext = %q\n", name, env, name)
		for _, p := range pools {
			fmt.Fprintf(&b, "\n[[clusters.%s.pools]]\nname = %q\nproduct = %q\nnodes = %d\n", name, p.name, p.product, p.nodes)
			if p.mig != "" {
				fmt.Fprintf(&b, "mig = %q\n", p.mig)
			}
		}
	}
	waves := 0
	for start := 0; start < n; {
		end := min(n, start+o.WaveSize)
		if start < staging(n) && end > staging(n) {
			end = staging(n) // a wave holds one environment
		}
		var names []string
		for i := start; i < end; i++ {
			names = append(names, fmt.Sprintf("%q", ClusterName(i, n)))
		}
		fmt.Fprintf(&b, "\n[[waves]]\nname = %q\nclusters = [%s]\n", WaveName(waves), strings.Join(names, ", "))
		if start >= staging(n) && end-start > 1 {
			fmt.Fprintf(&b, "canary = %q\npause-after-canary = true\nrequire-approval = true\n", ClusterName(start, n))
		}
		waves++
		start = end
	}
	b.WriteString(tail.String())
	fmt.Fprintf(&b, "\n[promotion]\nstable = %q\n", Stable)
	if o.Rollout {
		fmt.Fprintf(&b, "rollout = { release = %q, wave = %q }\n", Next, WaveName(waves/2))
	}
	b.WriteString("approved = []\npaused = false\n")
	return []byte(b.String())
}

// section is one table of a TOML file: its header line and everything up
// to the next header (comments above a header go with the table before).
type section struct {
	table string // the header's key, "" before the first header
	text  string
}

func sections(src string) []section {
	var out []section
	cur := section{}
	var text strings.Builder
	for line := range strings.Lines(src) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "[") {
			cur.text = text.String()
			out = append(out, cur)
			text.Reset()
			key := strings.Trim(t, "[]")
			if i := strings.Index(t, "]"); i > 0 {
				key = strings.Trim(t[:i], "[] ")
			}
			cur = section{table: key}
		}
		text.WriteString(line)
	}
	cur.text = text.String()
	return append(out, cur)
}

// moduleRoot is the folder holding go.mod, above the test's folder.
func moduleRoot(tb testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := sharedtest.ModuleRoot(wd)
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}
