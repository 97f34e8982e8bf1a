package controller

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// BenchmarkRollout rolls a driver over 1,000, 2,500 and 5,000 nodes, each
// size on a fresh real kube-apiserver, and reports per size:
//
//   - cache-MiB, cache-KiB/node: the live heap the controller's manager
//     holds once its cache has synced (after a GC, less the heap before
//     it started), and cached-pods: the pods that cache holds;
//   - pass-ms: one planning pass (observe from the cache, then
//     planner.Plan) over every node, all Pending; pass-mid-ms: the median
//     of such passes sampled while the rollout runs (they read the pods of
//     draining nodes from the API server, as the controller's do); the
//     -cpu- figures are the same passes' CPU time (see threadCPU);
//   - wall-s to complete the rollout, and the controller's API traffic
//     counted by a RoundTripper under its client: writes/node (node
//     patches, evictions and DriverRollout writes), node-patches/node,
//     evictions/node, events/node (the Events it records, not in
//     writes/node), drain-lists/node (its direct reads of a draining
//     node's pods);
//   - heap-after-MiB: the manager's live heap once the rollout completed;
//   - full-cache-MiB: what a cache of every pod and whole nodes takes on
//     the same cluster (the controller's cache before it was limited).
//
// Each node looks like a kubelet's (50 container images in its status) and
// carries four pods: the driver, two other DaemonSet pods and one workload
// pod the drain must evict. A light agent (benchAgent) plays the kubelet
// and the driver: an evicted pod goes at once, a node whose driver label
// changed gets a Ready driver pod of that version and reports it.
//
//	go test -run '^$' -bench BenchmarkRollout -benchtime 1x ./internal/controller/
//
// GPUFLEET_BENCH_NODES (e.g. "1000") runs other sizes.
func BenchmarkRollout(b *testing.B) {
	sizes := []int{1000, 2500, 5000}
	if s := os.Getenv("GPUFLEET_BENCH_NODES"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("GPUFLEET_BENCH_NODES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchRollout(b, n) })
	}
}

func benchRollout(b *testing.B, nodes int) {
	if testing.Short() {
		b.Skip("needs kube-apiserver and etcd")
	}
	ctx := context.Background()
	tb := testbed.New(b, testbed.Options{CRDDirs: []string{"../../config/crd/bases"}, Scheme: testScheme()})
	cl := tb.Clusters()[0]
	c := cl.Client
	if err := installAdmission(ctx, c); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", i)
		agent := newBenchAgent(b, c, name, nodes)

		base := liveHeap()
		var traffic apiTraffic
		cfg := asController(cl.Config)
		cfg.Wrap(traffic.wrap)
		mctx, stopManager := context.WithCancel(ctx)
		mgr, err := NewManager(mctx, cfg, Options{MetricsAddr: "0", ProbeAddr: "0", DrainRetry: time.Second, SkipNameValidation: true})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			b.Fatal("cache did not sync")
		}
		// A list warms the pod informer (informers start on first use).
		var cached corev1.PodList
		if err := mgr.GetClient().List(ctx, &cached); err != nil {
			b.Fatal(err)
		}
		var cachedNodes corev1.NodeList
		if err := mgr.GetClient().List(ctx, &cachedNodes); err != nil || len(cachedNodes.Items) < nodes {
			b.Fatalf("cached nodes: %d of %d, %v", len(cachedNodes.Items), nodes, err)
		}
		cachedPods := len(cached.Items)
		cached, cachedNodes = corev1.PodList{}, corev1.NodeList{}
		cacheHeap := liveHeap() - base
		fullHeap := fullCacheHeap(b, cl.Config)

		ro := newRollout(name, name, oldDriver, newDriver)
		ro.Spec.ParallelNodes = int32(nodes / 10)
		ro.Spec.MaxUnavailable = new(intstr.FromString("10%"))
		ro.Spec.Soak = metav1.Duration{Duration: time.Second}
		ro.Spec.Timeouts = v1alpha1.StepTimeouts{
			Drain:    metav1.Duration{Duration: 5 * time.Minute},
			Install:  metav1.Duration{Duration: 5 * time.Minute},
			Validate: metav1.Duration{Duration: 5 * time.Minute},
		}
		// The sampler plans with its own reconciler over the manager's
		// cache; its direct reads go past the counted client.
		sampler := &Reconciler{Client: mgr.GetClient(), APIReader: c, DrainRetry: time.Second}
		if sampler.nodeStore, err = nodeStore(ctx, mgr.GetCache()); err != nil {
			b.Fatal(err)
		}
		pass := func() (wall, cpu time.Duration) {
			cur := &v1alpha1.DriverRollout{}
			if err := mgr.GetClient().Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
				cur = ro.DeepCopy()
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU()
			start := time.Now()
			obs, err := sampler.observe(ctx, cur, start)
			if err != nil {
				b.Fatal(err)
			}
			planner.Plan(obs.snap, start)
			return time.Since(start), threadCPU() - t0
		}
		var idle, idleCPU time.Duration
		const passes = 20
		for range passes {
			w, c := pass()
			idle, idleCPU = idle+w, idleCPU+c
		}

		aCtx, stopAgent := context.WithCancel(ctx)
		agentDone := make(chan struct{})
		go func() { defer close(agentDone); agent.run(aCtx) }()
		b.StartTimer()
		start := time.Now()
		if err := c.Create(ctx, ro); err != nil {
			b.Fatal(err)
		}
		var mid, midCPU []time.Duration
		last := time.Now()
		benchWait(b, 30*time.Minute, func() (bool, string) {
			got := &v1alpha1.DriverRollout{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
				return false, err.Error()
			}
			if got.Status.Phase == v1alpha1.PhaseCompletedWithFailures || got.Status.Phase == v1alpha1.PhaseStalled {
				b.Fatalf("rollout %s: %s", got.Status.Phase, got.Status.Progress)
			}
			if got.Status.Phase == v1alpha1.PhaseCompleted {
				return true, ""
			}
			if time.Since(last) > 2*time.Second && got.Status.Phase == v1alpha1.PhaseProgressing {
				w, c := pass()
				mid, midCPU = append(mid, w), append(midCPU, c)
				last = time.Now()
			}
			return false, got.Status.Progress
		})
		elapsed := time.Since(start)
		b.StopTimer()
		stopAgent()
		<-agentDone
		afterHeap := liveHeap() - base
		events := traffic.get("POST", "events")
		stopManager()
		if err := <-done; err != nil {
			b.Fatal(err)
		}

		per := func(v int64) float64 { return float64(v) / float64(nodes) }
		patches := traffic.get("PATCH", "nodes")
		evictions := traffic.get("POST", "pods/eviction")
		rollout := traffic.writes("driverrollouts") + traffic.writes("driverrollouts/status")
		slices.Sort(mid)
		slices.Sort(midCPU)
		b.ReportMetric(elapsed.Seconds(), "wall-s")
		b.ReportMetric(per(patches+evictions+rollout), "writes/node")
		b.ReportMetric(per(patches), "node-patches/node")
		b.ReportMetric(per(evictions), "evictions/node")
		b.ReportMetric(per(events), "events/node")
		b.ReportMetric(per(traffic.get("LIST", "pods")), "drain-lists/node")
		b.ReportMetric(float64(cacheHeap)/(1<<20), "cache-MiB")
		b.ReportMetric(float64(cacheHeap)/1024/float64(nodes), "cache-KiB/node")
		b.ReportMetric(float64(fullHeap)/(1<<20), "full-cache-MiB")
		b.ReportMetric(float64(afterHeap)/(1<<20), "heap-after-MiB")
		b.ReportMetric(float64(cachedPods), "cached-pods")
		b.ReportMetric(float64(idle.Microseconds())/1000/passes, "pass-ms")
		b.ReportMetric(float64(idleCPU.Microseconds())/1000/passes, "pass-cpu-ms")
		if len(mid) > 0 {
			b.ReportMetric(float64(mid[len(mid)/2].Microseconds())/1000, "pass-mid-ms")
			b.ReportMetric(float64(midCPU[len(midCPU)/2].Microseconds())/1000, "pass-mid-cpu-ms")
		}
		b.Logf("%d nodes in %s: API traffic of the controller %v; %d mid-rollout passes sampled, peak RSS %d MiB",
			nodes, elapsed.Round(time.Millisecond), traffic.summary(), len(mid), peakRSS()>>20)
	}
}

// fullCacheHeap is the live heap an informer cache of every pod and every
// whole node takes on this cluster, which is what the controller's cache
// held before cacheOptions limited it: the figure to compare cache-MiB with.
func fullCacheHeap(b *testing.B, cfg *rest.Config) int64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := liveHeap()
	c, err := cache.New(cfg, cache.Options{Scheme: NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("full cache did not sync")
	}
	held := liveHeap() - base
	runtime.KeepAlive(c)
	return held
}

// liveHeap is the live heap after a collection, in bytes.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func benchWait(b *testing.B, timeout time.Duration, cond func() (bool, string)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s: %s", timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apiTraffic counts the requests a client sends, by verb and resource
// ("LIST" for a GET of a collection, "WATCH" for a watch).
type apiTraffic struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (t *apiTraffic) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		t.count(req)
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (t *apiTraffic) count(req *http.Request) {
	verb, res := req.Method, resourceOf(req.URL.Path)
	switch {
	case verb == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case verb == http.MethodGet && !strings.Contains(res, "/") && isCollection(req.URL.Path, res):
		verb = "LIST"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]int64{}
	}
	t.counts[verb+" "+res]++
}

func (t *apiTraffic) get(verb, res string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[verb+" "+res]
}

func (t *apiTraffic) writes(res string) int64 {
	var n int64
	for _, v := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		n += t.get(v, res)
	}
	return n
}

func (t *apiTraffic) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, t.counts[k]))
	}
	return strings.Join(parts, " ")
}

// resourceOf is the resource (with its subresource, "pods/eviction") of an
// API path: /api/v1/namespaces/ns/pods/p/eviction, /apis/g/v/nodes/n.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return ""
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

func isCollection(path, res string) bool {
	return strings.HasSuffix(strings.TrimRight(path, "/"), "/"+res)
}

// peakRSS is the process's peak resident memory (VmHWM), in bytes.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// benchAgent plays kubelet and driver for many nodes with a few lists a
// pass: an evicted pod is deleted at once, a node whose driver label
// changed gets a Ready driver pod of that version and reports the version.
type benchAgent struct {
	b    *testing.B
	c    client.Client
	pool string
}

// Namespaces of the benchmark's pods.
const (
	benchDriverNS   = "gpu-operator"
	benchWorkloadNS = "inference"
)

func newBenchAgent(b *testing.B, c client.Client, pool string, n int) *benchAgent {
	ctx := context.Background()
	a := &benchAgent{b: b, c: c, pool: pool}
	for _, ns := range []string{benchDriverNS, benchWorkloadNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
	}
	if err := parallel(n, func(i int) error { return a.createNode(ctx, fmt.Sprintf("%s-%04d", pool, i)) }); err != nil {
		b.Fatal(err)
	}
	return a
}

// parallel runs fn(0..n-1), 16 at a time, and returns the first error.
func parallel(n int, fn func(int) error) error {
	sem := make(chan struct{}, 16)
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

func (a *benchAgent) createNode(ctx context.Context, name string) error {
	if err := a.createBareNode(ctx, name); err != nil {
		return err
	}
	if err := a.createDriverPod(ctx, name, oldDriver); err != nil {
		return err
	}
	for _, ds := range []string{"nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter"} {
		if err := a.c.Create(ctx, benchPod(name+"-"+ds, benchDriverNS, name, map[string]string{"app": ds}, "DaemonSet", ds, "nvcr.io/nvidia/"+ds+":v1")); err != nil {
			return err
		}
	}
	// The serving replica holds a GPU: the drain evicts it.
	serve := benchPod(name+"-serve", benchWorkloadNS, name, map[string]string{"app": "serve"}, "ReplicaSet", "serve", "serving:v1")
	serve.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.ResourceGPU: resource1}
	return a.c.Create(ctx, serve)
}

// createBareNode creates a GPU node of the pool, Ready, without pods.
func (a *benchAgent) createBareNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"gpufleet.io/pool": a.pool, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", v1alpha1.LabelDriver: oldDriver, v1alpha1.LabelGFDDriverFull: oldDriver,
	}}}
	if err := a.c.Create(ctx, node); err != nil {
		return err
	}
	// As a kubelet reports it: its 50 largest images, capacity, identity.
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
		Capacity: corev1.ResourceList{"cpu": resource.MustParse("192"), "memory": resource.MustParse("2Ti"), "nvidia.com/gpu": resource.MustParse("8")},
		NodeInfo: corev1.NodeSystemInfo{KernelVersion: "5.15.0-122-generic", OSImage: "Ubuntu 22.04.5 LTS", ContainerRuntimeVersion: "containerd://1.7.27", KubeletVersion: "v1.37.2"},
	}
	for i := range 50 {
		node.Status.Images = append(node.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example.com/team-%02d/serving-image-%02d@sha256:%064x", i, i, i), fmt.Sprintf("registry.example.com/team-%02d/serving-image-%02d:v1.%d.0", i, i, i)},
			SizeBytes: int64(i+1) << 26,
		})
	}
	return a.c.Status().Update(ctx, node)
}

// benchPod is a pod on node owned by a controller of kind, with the
// environment and host mounts operator pods carry.
func benchPod(name, ns, node string, lbls map[string]string, kind, owner, image string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner,
				UID: "00000000-0000-0000-0000-000000000001", Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
	for i := range 8 {
		v := fmt.Sprintf("host-%d", i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/nvidia/" + v}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v, MountPath: "/run/nvidia/" + v})
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", i), Value: "a value the operator sets"})
	}
	return p
}

func (a *benchAgent) createDriverPod(ctx context.Context, node, version string) error {
	p := benchPod(node+"-"+strings.ReplaceAll(version, ".", "-"), benchDriverNS, node,
		map[string]string{"app.kubernetes.io/component": "nvidia-driver", "bench/version": version},
		"DaemonSet", "driver", "nvcr.io/nvidia/driver:"+version+"-ubuntu22.04")
	if err := a.c.Create(ctx, p); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	return a.c.Status().Update(ctx, p)
}

func (a *benchAgent) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.pass(ctx); err != nil && ctx.Err() == nil {
			a.b.Logf("bench agent: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (a *benchAgent) pass(ctx context.Context) error {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := a.c.List(ctx, nodes, client.MatchingLabels{"gpufleet.io/pool": a.pool}); err != nil {
		return err
	}
	var drivers, workload corev1.PodList
	if err := a.c.List(ctx, &drivers, client.InNamespace(benchDriverNS), client.HasLabels{"bench/version"}); err != nil {
		return err
	}
	if err := a.c.List(ctx, &workload, client.InNamespace(benchWorkloadNS)); err != nil {
		return err
	}
	// The kubelet: an evicted pod's containers stop at once.
	var gone []*corev1.Pod
	for i := range workload.Items {
		if workload.Items[i].DeletionTimestamp != nil {
			gone = append(gone, &workload.Items[i])
		}
	}
	if err := parallel(len(gone), func(i int) error {
		return client.IgnoreNotFound(a.c.Delete(ctx, gone[i], client.GracePeriodSeconds(0)))
	}); err != nil {
		return err
	}
	// The driver: a new pod for the version the node's label asks for,
	// then GPU Feature Discovery's report of it.
	byNode := map[string]*corev1.Pod{}
	for i := range drivers.Items {
		byNode[drivers.Items[i].Spec.NodeName] = &drivers.Items[i]
	}
	var todo []*metav1.PartialObjectMetadata
	for i := range nodes.Items {
		n := &nodes.Items[i]
		want := n.Labels[v1alpha1.LabelDriver]
		if p := byNode[n.Name]; (p != nil && p.Labels["bench/version"] != want) || n.Labels[v1alpha1.LabelGFDDriverFull] != want {
			todo = append(todo, n)
		}
	}
	return parallel(len(todo), func(i int) error {
		n := todo[i]
		want := n.Labels[v1alpha1.LabelDriver]
		if p := byNode[n.Name]; p != nil && p.Labels["bench/version"] != want {
			if err := a.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return err
			}
			if err := a.createDriverPod(ctx, n.Name, want); err != nil {
				return err
			}
		}
		if n.Labels[v1alpha1.LabelGFDDriverFull] != want {
			patch := client.MergeFrom(n.DeepCopy())
			n.Labels[v1alpha1.LabelGFDDriverFull] = want
			return a.c.Patch(ctx, n, patch)
		}
		return nil
	})
}
