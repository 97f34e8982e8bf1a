package controller

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// BenchmarkPass5000 times one planning pass of the controller over 5,000
// nodes: observe (from the synced cache of a real manager on a real API
// server) and planner.Plan, for a rollout over all of them, not started.
// BenchmarkRollout samples the same pass while a rollout runs. cpu-ms/pass
// is the pass's own CPU time (its thread's), which the machine's other
// work does not inflate as it does ms/pass.
//
//	go test -run '^$' -bench BenchmarkPass5000 ./internal/controller/
func BenchmarkPass5000(b *testing.B) {
	const nodes = 5000
	if testing.Short() {
		b.Skip("needs kube-apiserver and etcd")
	}
	ctx := context.Background()
	tb := testbed.New(b, testbed.Options{CRDDirs: []string{"../../config/crd/bases"}, Scheme: testScheme()})
	cl := tb.Clusters()[0]
	a := &benchAgent{b: b, c: cl.Client, pool: "pass"}
	if err := parallel(nodes, func(i int) error { return a.createBareNode(ctx, fmt.Sprintf("pass-%04d", i)) }); err != nil {
		b.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	mgr, err := NewManager(mctx, cl.Config, Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: cl.Client}
	if r.nodeStore, err = nodeStore(ctx, mgr.GetCache()); err != nil {
		b.Fatal(err)
	}
	ro := newRollout("pass", "pass", oldDriver, newDriver)
	ro.Spec.ParallelNodes = nodes / 10
	var seen int
	var cpu time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		t0 := threadCPU()
		now := time.Now()
		obs, err := r.observe(ctx, ro, now)
		if err != nil {
			b.Fatal(err)
		}
		res := planner.Plan(obs.snap, now)
		cpu += threadCPU() - t0
		seen = len(obs.snap.Nodes)
		if len(res.Transitions) == 0 && res.Status.Phase != v1alpha1.PhaseProgressing {
			b.Fatalf("the plan starts nothing: %s", res.Status.Progress)
		}
	}
	if seen < nodes {
		b.Fatalf("observed %d nodes, want %d", seen, nodes)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/pass")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/pass")
}
