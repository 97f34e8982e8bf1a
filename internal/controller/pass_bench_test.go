package controller

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// BenchmarkPass5000 times one planning pass of the controller over 5,000
// nodes: observe (from the synced caches of a real manager on a real API
// server, the GPU pods' among them: one node in ten runs a GPU job, so
// the pass orders the pending nodes by their GPU work) and planner.Plan,
// for a rollout over all of them, not started.
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
	if err := cl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchWorkloadNS}}); err != nil {
		b.Fatal(err)
	}
	if err := parallel(nodes/10, func(i int) error { return a.createRunningGPUPod(ctx, fmt.Sprintf("pass-%04d", i*10+7)) }); err != nil {
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
	gpuPods, err := newGPUPodCache(mctx, cl.Config, mgr.GetScheme(), cache.Options{HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = gpuPods.Start(mctx) }()
	if !gpuPods.WaitForCacheSync(ctx) {
		b.Fatal("GPU pod cache did not sync")
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: cl.Client, GPUPods: gpuPods}
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

// createRunningGPUPod runs a one-GPU job on node, started an hour ago, as
// a kubelet reports it.
func (a *benchAgent) createRunningGPUPod(ctx context.Context, node string) error {
	p := benchPod(node+"-train", benchWorkloadNS, node, map[string]string{"app": "train"}, "Job", "train", "train:v1")
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.ResourceGPU: resource1}
	if err := a.c.Create(ctx, p); err != nil {
		return err
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}
	return a.c.Status().Update(ctx, p)
}
