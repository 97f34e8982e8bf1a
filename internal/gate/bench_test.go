package gate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// benchServers are the real API servers the benchmark's kubeconfig
// contexts point at, in turn: hundreds of control planes do not fit a
// 2-core machine, and the gate's cost per cluster (its own connection,
// client and reads) is the same whichever server answers.
var benchServers = []string{"a", "b", "c"}

// BenchmarkGate checks 1, 100 and 500 clusters of one wave and reports, for
// each, the wall time of a whole gate run and the most heap it held at once
// (sampled every 5 ms; -benchmem adds what it allocated in all). Each
// cluster is its own kubeconfig context, so it gets its own client and
// connection, as separate clusters do; the contexts take turns on three
// real API servers, each arranged as a converged cluster with 8 GPU nodes.
// The concurrency/* runs check the 500 clusters with other bounds on the
// clusters checked at once.
//
//	go test -run '^$' -bench BenchmarkGate -benchmem -benchtime 3x ./internal/gate/
func BenchmarkGate(b *testing.B) {
	const n = 500
	f, names := benchFleet(b, n)
	crds, err := gatetest.CRDDirs("../..", "v25.3.4")
	if err != nil {
		b.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(b, testbed.Options{Clusters: benchServers, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	for _, c := range tb.Clusters() {
		if _, err := gatetest.Arrange(b.Context(), c.Client, gate.Expect(f, names[0], rev)); err != nil {
			b.Fatal(err)
		}
	}
	kc := benchKubeconfig(b, tb.Kubeconfig, names)
	run := func(b *testing.B, clusters []string, concurrency int) {
		var peak uint64
		for b.Loop() {
			stop := sampleHeap(&peak)
			rep := gate.Run(b.Context(), gate.Options{Fleet: f, Clusters: clusters, Revision: rev, Kubeconfig: kc,
				Timeout: 60 * time.Second, Concurrency: concurrency, Now: time.Now})
			stop()
			if rep.Verdict() != gate.Pass {
				b.Fatalf("verdict %s: %+v", rep.Verdict(), rep.Failed()[:min(3, len(rep.Failed()))])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
	for _, size := range []int{1, 100, n} {
		b.Run(fmt.Sprintf("clusters=%d", size), func(b *testing.B) { run(b, names[:size], 0) })
	}
	for _, c := range []int{8, 128} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) { run(b, names, c) })
	}
}

// benchFleet is a fleet of n clusters with one 8-node H100 pool each, all
// in one wave, on the stable release.
func benchFleet(b *testing.B, n int) (*fleet.Fleet, []string) {
	var src strings.Builder
	src.WriteString("[releases.r1]\ngpu-operator = \"v25.3.4\"\nnetwork-operator = \"v25.4.0\"\ndriver = \"570.172.08\"\n")
	var names, quoted []string
	for i := range n {
		name := fmt.Sprintf("c%03d", i)
		names = append(names, name)
		quoted = append(quoted, fmt.Sprintf("%q", name))
		fmt.Fprintf(&src, "[clusters.%s]\nenvironment = \"prod\"\n[[clusters.%s.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 8\n", name, name)
	}
	fmt.Fprintf(&src, "[[waves]]\nname = \"all\"\nclusters = [%s]\n[promotion]\nstable = \"r1\"\n", strings.Join(quoted, ", "))
	f, err := fleet.Parse("bench.toml", []byte(src.String()))
	if err != nil {
		b.Fatal(err)
	}
	return f, names
}

// benchKubeconfig writes a kubeconfig with one context per cluster name
// (the fleet's default context is the cluster's name), taking turns on the
// testbed's servers.
func benchKubeconfig(b *testing.B, path string, names []string) string {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for i, name := range names {
		ctx := *cfg.Contexts[benchServers[i%len(benchServers)]]
		cfg.Contexts[name] = &ctx
	}
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		b.Fatal(err)
	}
	return kc
}

// sampleHeap records into peak the most live heap seen until stop is
// called, starting from a collected heap.
func sampleHeap(peak *uint64) (stop func()) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		*peak = max(*peak, sample[0].Value.Uint64())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		read()
	}
}
