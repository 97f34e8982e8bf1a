package gate_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// BenchmarkGate checks 20 clusters concurrently and one alone, and reports
// both wall times. The 20 kubeconfig contexts alternate between two real
// API servers (twenty control planes do not fit a 2-core machine); each
// context is checked over its own connection, as separate clusters are.
func BenchmarkGate(b *testing.B) {
	const n = 20
	var src strings.Builder
	src.WriteString("[releases.r1]\ngpu-operator = \"v25.3.4\"\nnetwork-operator = \"v25.4.0\"\ndriver = \"570.172.08\"\n")
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c%02d", i)
		names = append(names, fmt.Sprintf("%q", name))
		fmt.Fprintf(&src, "[clusters.%s]\nenvironment = \"prod\"\n[[clusters.%s.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 8\n", name, name)
	}
	fmt.Fprintf(&src, "[[waves]]\nname = \"all\"\nclusters = [%s]\n[promotion]\nstable = \"r1\"\n", strings.Join(names, ", "))
	f, err := fleet.Parse("bench.toml", []byte(src.String()))
	if err != nil {
		b.Fatal(err)
	}
	crds, err := gatetest.CRDDirs("../..", "v25.3.4")
	if err != nil {
		b.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(b, testbed.Options{Clusters: []string{"a", "b"}, CRDDirs: crds, Scheme: gatetest.Scheme()})
	for _, c := range tb.Clusters() {
		if _, err := gatetest.Arrange(b.Context(), c.Client, gate.Expect(f, "c00", rev)); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := clientcmd.LoadFromFile(tb.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		ctx := *cfg.Contexts[[]string{"a", "b"}[i%2]]
		cfg.Contexts[fmt.Sprintf("c%02d", i)] = &ctx
	}
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		b.Fatal(err)
	}
	all := f.ClusterNames()
	run := func(clusters []string) time.Duration {
		start := time.Now()
		rep := gate.Run(b.Context(), gate.Options{Fleet: f, Clusters: clusters, Revision: rev, Kubeconfig: kc, Timeout: 30 * time.Second, Now: time.Now})
		if rep.Verdict() != gate.Pass {
			b.Fatalf("verdict %s: %+v", rep.Verdict(), rep.Failed())
		}
		return time.Since(start)
	}
	var one, twenty time.Duration
	for b.Loop() {
		one += run(all[:1])
		twenty += run(all)
	}
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/1-cluster")
	b.ReportMetric(float64(twenty.Milliseconds())/float64(b.N), "ms/20-clusters")
}
