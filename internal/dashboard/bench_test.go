//go:build unix

package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dashboard"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

const (
	benchClusters = 200
	benchNodes    = 100
	benchProduct  = "NVIDIA-H100-80GB-HBM3"
)

// BenchmarkDashboard200x100 measures the dashboard's own cost for a fleet of
// 200 clusters of 100 GPU nodes each, every one rolling a driver. The 200
// clusters are 200 kubeconfig contexts of one real API server holding 100
// nodes and the DriverRollout: the dashboard cannot tell, so it keeps 200
// sets of informers, 200 caches of 100 nodes and 200 views, as it would
// for 200 clusters; only the API server's side is shared.
//
// One op is one node changing phase: the change reaches all 200 caches by
// their watches and every view is rebuilt (ns/op is the time until all 200
// show it). Reported: heap held for the fleet (MiB), CPU per view rebuild
// (the dashboard process's user+system time over the rebuilds it made),
// API requests per cluster per minute when nothing changes and while
// nodes change, and the cost of serving the whole page.
func BenchmarkDashboard200x100(b *testing.B) {
	if testing.Short() {
		b.Skip("dashboard: the benchmark needs the testbed")
	}
	ctx := b.Context()
	ctrllog.SetLogger(logr.Discard())
	// The kinds the gate reads are all served (gpufleet's, Flux's and the
	// GPU Operator's CRDs), as on a bootstrapped cluster; their objects but
	// the DriverRollout are absent, which costs the dashboard nothing more.
	bins, err := testbed.FindBinaries()
	if err != nil {
		b.Fatal(err)
	}
	crds := []string{filepath.Join("..", "..", "config", "crd", "bases"), bins.FluxCRDDir()}
	if op := filepath.Join("..", "..", "..", "shared", "operators", "gpu-operator", "v25.3.4", "deployments", "gpu-operator", "crds"); dirExists(op) {
		crds = append(crds, op)
	}
	tb, err := testbed.Start(ctx, testbed.Options{Clusters: []string{"bench"}, CRDDirs: crds, Dir: b.TempDir(), Scheme: gate.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tb.Stop() })
	dir := b.TempDir()
	fleetFile := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(fleetFile, []byte(benchFleet()), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := fleet.Load(fleetFile)
	if err != nil {
		b.Fatal(err)
	}
	target, err := render.TargetFor(f, "c000")
	if err != nil {
		b.Fatal(err)
	}
	c := tb.Cluster("bench").Client
	rollout := target.DriverRollout.Name
	if err := c.Create(ctx, target.DriverRollout.DeepCopy()); err != nil {
		b.Fatal(err)
	}
	phases := []v1alpha1.NodePhase{v1alpha1.NodeDone, v1alpha1.NodeSoaking, v1alpha1.NodeInstalling, v1alpha1.NodePending}
	for i := range benchNodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%03d", i), Annotations: map[string]string{},
			Labels: map[string]string{v1alpha1.LabelGFDProduct: benchProduct, v1alpha1.LabelDriver: "580.95.05", v1alpha1.LabelGFDDriverFull: "570.172.08"}}}
		v1alpha1.NodeState{Rollout: rollout, Phase: phases[i%len(phases)], Since: time.Now()}.Encode(n.Labels, n.Annotations)
		if err := c.Create(ctx, n); err != nil {
			b.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "KubeletReady"}}
		if err := c.Status().Update(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	kubeconfig := fanOutKubeconfig(b, tb.Kubeconfig, "bench", dir)

	heapBefore := heapInUse()
	d, err := dashboard.New(dashboard.Options{FleetFile: fleetFile, Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	began := time.Now()
	waitAll(b, d, func(v *dashboard.ClusterView) bool {
		return v.Reachable && v.Rollout != nil && len(v.Rollout.Nodes) == benchNodes
	})
	// Metrics reported before b.Loop are dropped: keep them for the end.
	toSync := time.Since(began)
	heap := heapInUse() - heapBefore

	// Idle: nothing changes; what remains is the readiness probes (and a
	// watch renewed now and then).
	idle := 20 * time.Second
	r0 := requests(d)
	time.Sleep(idle)
	idleRate := float64(requests(d)-r0) / benchClusters / idle.Minutes()

	// The page, as a browser that opens it gets it.
	rec := httptest.NewRecorder()
	t0 := time.Now()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/", nil))
	pageTime, pageSize := time.Since(t0), rec.Body.Len()
	if rec.Code != http.StatusOK {
		b.Fatalf("GET / answered %d:\n%s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest("GET", "http://localhost/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec = httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, req)
	gzSize := rec.Body.Len()

	cpu0, rb0, req0, wall0 := cpuTime(), rebuilds(d), requests(d), time.Now()
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("gpu-%03d", i%benchNodes)
		phase := []string{"Draining", "Installing", "Validating", "Soaking"}[i%4]
		i++
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			b.Fatal(err)
		}
		base := n.DeepCopy()
		n.Labels[v1alpha1.LabelPhase] = phase
		if err := c.Patch(ctx, n, client.MergeFrom(base)); err != nil {
			b.Fatal(err)
		}
		waitAll(b, d, func(v *dashboard.ClusterView) bool {
			for _, nv := range v.Rollout.Nodes {
				if nv.Name == name {
					return nv.Phase == phase
				}
			}
			return false
		})
	}
	b.StopTimer()
	wall := time.Since(wall0)
	if n := rebuilds(d) - rb0; n > 0 {
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu-µs/rebuild")
		b.ReportMetric(float64(n)/float64(i), "rebuilds/op")
	}
	b.ReportMetric(float64(requests(d)-req0)/benchClusters/wall.Minutes(), "req/cluster/min-busy")
	b.ReportMetric(idleRate, "req/cluster/min-idle")
	b.ReportMetric(toSync.Seconds(), "s-to-sync")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(pageTime.Microseconds())/1000, "page-ms")
	b.ReportMetric(float64(pageSize)/1024, "page-KiB")
	b.ReportMetric(float64(gzSize)/1024, "page-gzip-KiB")
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// benchFleet is a fleet file of benchClusters clusters of benchNodes nodes,
// in four waves, with r2 rolling out at the first.
func benchFleet() string {
	var s strings.Builder
	s.WriteString(`[charts]
mode = "manifests"
repository = "charts"

[releases.r1]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "570.172.08"

[releases.r2]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "580.95.05"

[policy]
parallel-nodes = 4
failure-budget = 2

[[policy.windows]]
days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
start = "00:00"
end = "23:59"
time-zone = "UTC"
`)
	waves := make([][]string, 4)
	for i := range benchClusters {
		name := fmt.Sprintf("c%03d", i)
		waves[i*len(waves)/benchClusters] = append(waves[i*len(waves)/benchClusters], fmt.Sprintf("%q", name))
		fmt.Fprintf(&s, "\n[clusters.%s]\nenvironment = \"prod\"\n\n[[clusters.%[1]s.pools]]\nname = \"h100\"\nproduct = %q\nnodes = %d\n", name, benchProduct, benchNodes)
	}
	for i, w := range waves {
		fmt.Fprintf(&s, "\n[[waves]]\nname = \"w%d\"\nclusters = [%s]\n", i+1, strings.Join(w, ", "))
	}
	s.WriteString("\n[promotion]\nstable = \"r1\"\nrollout = { release = \"r2\", wave = \"w4\", stage = \"all\" }\napproved = []\npaused = false\n")
	return s.String()
}

// fanOutKubeconfig writes a kubeconfig whose benchClusters contexts all
// reach cluster's API server.
func fanOutKubeconfig(b *testing.B, path, cluster, dir string) string {
	b.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := cfg.Contexts[cluster]
	for i := range benchClusters {
		cfg.Contexts[fmt.Sprintf("c%03d", i)] = &clientcmdapi.Context{Cluster: ctx.Cluster, AuthInfo: ctx.AuthInfo}
	}
	out := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		b.Fatal(err)
	}
	return out
}

func waitAll(b *testing.B, d *dashboard.Dashboard, ok func(*dashboard.ClusterView) bool) {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		views := d.Views()
		all := len(views) == benchClusters
		for _, v := range views {
			if all && !ok(v) {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the dashboard's views did not get there in time (%d views)", len(views))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func requests(d *dashboard.Dashboard) int64 {
	var n int64
	for _, r := range d.Stats().Requests {
		n += r
	}
	return n
}

func rebuilds(d *dashboard.Dashboard) int64 {
	var n int64
	for _, r := range d.Stats().Rebuilds {
		n += r
	}
	return n
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
