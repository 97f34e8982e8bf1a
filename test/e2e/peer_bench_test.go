package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// BenchmarkPeer measures, on the real GPU Operator v25.3.4, the same cluster
// rolled three ways under the same numbers (make bench-peer; docs/peer.md):
//
//	operator  the operator's upgrade controller alone, with
//	          maxParallelUpgrades and maxUnavailable equal to gpufleet's
//	          (gpufleet-controller does not run);
//	gpufleet  gpufleet's own actuator;
//	gated     the gpu-operator actuator: the operator's upgrade controller,
//	          released node by node by gpufleet-controller.
//
// Each iteration is one rollout of a good release (one node raises an XID
// right after its upgrade) and one of a bad one, on a fresh testbed: two
// nodes cordoned by hand, a workload with a PodDisruptionBudget on the GPU
// nodes, the same install time. GPUFLEET_PEER_RUNS (default 3) runs each
// cell that many times (run it with -benchtime 1x), and
// GPUFLEET_PEER_WAYS (default all three) picks the ways;
// the table with min/median/max is logged and written to $GPUFLEET_PEER_TABLE
// when set. GPUFLEET_PEER_NODES lists the cluster sizes (default 24). It runs
// only with GPUFLEET_PEER set, as make bench-peer does.
func BenchmarkPeer(b *testing.B) {
	if testing.Short() {
		b.Skip("peer bench: needs the testbed")
	}
	if os.Getenv("GPUFLEET_PEER") == "" {
		// Minutes per cell: only `make bench-peer` runs it, not make bench.
		b.Skip("peer bench: run it with make bench-peer (GPUFLEET_PEER=1)")
	}
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	if err := lab.CheckPrograms(); err != nil {
		b.Fatalf("peer bench: %v", err)
	}
	sizes := []int{24}
	if v := os.Getenv("GPUFLEET_PEER_NODES"); v != "" {
		sizes = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 6 {
				b.Fatalf("GPUFLEET_PEER_NODES=%q: want sizes of at least 6 nodes", v)
			}
			sizes = append(sizes, n)
		}
	}
	runs := 3
	if v := os.Getenv("GPUFLEET_PEER_RUNS"); v != "" {
		var err error
		if runs, err = strconv.Atoi(v); err != nil || runs < 1 {
			b.Fatalf("GPUFLEET_PEER_RUNS=%q: want a count", v)
		}
	}
	// GPUFLEET_PEER_WAYS runs only some of the ways (a run to add to a
	// column; the table keeps all three).
	ways := peerWays
	if v := os.Getenv("GPUFLEET_PEER_WAYS"); v != "" {
		ways = nil
		for w := range strings.SplitSeq(v, ",") {
			if w = strings.TrimSpace(w); !slices.Contains(peerWays, w) {
				b.Fatalf("GPUFLEET_PEER_WAYS=%q: want some of %s", v, strings.Join(peerWays, ","))
			}
			ways = append(ways, w)
		}
	}
	table := &peerTable{cells: map[string][]peerRun{}}
	// The table is written after every run, so a bench stopped half-way
	// keeps what it has.
	save := func() {
		if f := os.Getenv("GPUFLEET_PEER_TABLE"); f != "" {
			if err := os.WriteFile(f, []byte(table.markdown(sizes)), 0o644); err != nil {
				b.Error(err)
			}
		}
	}
	// Run by run across the ways, not cell by cell: a column stopped
	// half-way (a run of 100 nodes takes a quarter of an hour on two cores)
	// still has every way measured as often as the others, give or take one.
	for _, n := range sizes {
		for run := range runs {
			for _, way := range ways {
				key := fmt.Sprintf("nodes=%d/way=%s", n, way)
				// One run per sub-benchmark, not b.N: the testing package
				// calls a benchmark with b.N = 1 before the b.N -benchtime
				// asks for, and each run here takes minutes.
				b.Run(fmt.Sprintf("%s/run=%d", key, run+1), func(b *testing.B) {
					r := runPeer(b, way, n)
					table.add(key, r)
					b.ReportMetric(r.makespan.Seconds(), "makespan-s")
				})
				save()
			}
		}
	}
	b.Logf("\n%s", table.markdown(sizes))
}

var peerWays = []string{"operator", "gpufleet", "gated"}

// The numbers every way runs with.
const (
	peerParallel       = 4
	peerMaxUnavailable = 6 // two hand-cordoned nodes plus four in flight
	peerSoak           = 5 * time.Second
)

// peerSafety is the canary and soak every way is rendered with: 1 node and
// peerSoak, or GPUFLEET_PEER_CANARY and GPUFLEET_PEER_SOAK, to measure what
// the gated path costs without the safety it adds (the operator alone has
// neither: it reads neither key).
type peerSafety struct {
	canary int
	soak   time.Duration
}

func peerSafetyFromEnv(b *testing.B) peerSafety {
	s := peerSafety{canary: 1, soak: peerSoak}
	if v := os.Getenv("GPUFLEET_PEER_CANARY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("GPUFLEET_PEER_CANARY=%q: want a count of nodes", v)
		}
		s.canary = n
	}
	if v := os.Getenv("GPUFLEET_PEER_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("GPUFLEET_PEER_SOAK=%q: want a duration above 0s", v)
		}
		s.soak = d
	}
	return s
}

// peerRun is what one iteration measured.
type peerRun struct {
	makespan time.Duration
	// reads, writes: gpufleet-controller's requests per node (client side);
	// cluster: node and pod writes per node by every component
	// (apiserver_request_total), both over the good rollout.
	reads, writes, cluster float64
	// operatorReads, operatorWrites: the GPU Operator's requests per node,
	// and upgrader the writes per node of what upgrades on this way (the
	// operator, gpufleet-controller, or both), as the API server's audit
	// log has them (by user agent: the testbed gives every program the
	// cluster admin's credentials).
	operatorReads, operatorWrites, upgrader float64
	// upgraderNodePods: upgrader's writes to nodes and pods (evictions
	// included) alone, per node; the operator's other writes are mostly
	// its operands' RBAC, rewritten on every reconcile whatever the nodes.
	upgraderNodePods float64
	// programs is every program's requests over the good rollout.
	programs map[string]testbed.Requests
	peak     float64
	// timeline says where the good rollout's time went (peerTimeline).
	timeline   string
	uncordoned bool
	badReached float64
	xid        string
}

func peerFleet(way string, safety peerSafety) string {
	actuator := "gpu-operator"
	if way == "gpufleet" {
		actuator = "gpufleet"
	}
	return fmt.Sprintf(`[charts]
mode = "manifests"
repository = "../shared/operators"

[releases.%[1]s]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "%[2]s"

[releases.%[3]s]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "%[4]s"

[releases.%[5]s]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "%[6]s"
expect-failure = true

[clusters.stg]
environment = "staging"

[[clusters.stg.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 3

[[waves]]
name = "staging"
clusters = ["stg"]

[policy]
actuator = "%[7]s"
canary-nodes = %[11]d
auto-approve-canary = true
parallel-nodes = %[8]d
max-unavailable = %[9]d
soak = "%[10]s"
failure-budget = 1
drain-timeout = "60s"
install-timeout = "60s"
validate-timeout = "60s"

[policy.health]
node-conditions = ["GpuXidError", "GpuEccError"]
event-reasons = ["XidError", "EccError"]

[promotion]
stable = "%[1]s"
approved = []
paused = false
`, lab.ReleaseStable, lab.DriverStable, lab.ReleaseGood, lab.DriverGood, lab.ReleaseDrill, lab.DriverDrill, actuator, peerParallel, peerMaxUnavailable, safety.soak, safety.canary)
}

// peerWorld is one fresh testbed of n nodes rolled way.
type peerWorld struct {
	b    *testing.B
	lw   *lab.World
	c    client.Client
	way  string
	n    int
	reqs struct{ reads, writes atomic.Int64 }
	// watched: the most GPU nodes cordoned or NotReady at once, and each
	// node's driver pod versions seen.
	mu         sync.Mutex
	peak       int
	versions   map[string][]string
	nodeLister corelisters.NodeLister
	// tl is every node's changes, for where the time went.
	tl     peerTimeline
	safety peerSafety
}

func (p *peerWorld) count(next http.RoundTripper) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			p.reqs.reads.Add(1)
		default:
			p.reqs.writes.Add(1)
		}
		return next.RoundTrip(r)
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// runPeer is one iteration: a fresh testbed, the good release, then the bad one.
func runPeer(b *testing.B, way string, n int) peerRun {
	b.Helper()
	ctx := b.Context()
	p := &peerWorld{b: b, way: way, n: n, versions: map[string][]string{}, safety: peerSafetyFromEnv(b)}
	b.Setenv("TMPDIR", b.TempDir())
	lw, err := lab.Start(ctx, lab.Options{
		Root: "../..", Dir: b.TempDir(), Clusters: []string{"stg"}, FleetTOML: []byte(peerFleet(way, p.safety)), ChartVersion: lab.ChartVersion,
		Pool:       nodesim.Pool{Name: lab.PoolName, Product: lab.Product, Nodes: n, Driver: lab.DriverStable},
		BadDrivers: []string{lab.DriverDrill}, SourceInterval: lab.SourceInterval, RootInterval: lab.RootInterval, GitUser: "bench",
		NoController: way == "operator", ControllerTransport: p.count, AuditLog: true,
	})
	if err != nil {
		b.Fatalf("peer bench: %v", err)
	}
	defer func() {
		if err := lw.Stop(); err != nil {
			b.Errorf("testbed: %v", err)
		}
	}()
	p.lw, p.c = lw, lw.Client("stg")
	p.watch()
	p.gpufleet("render", "-f", lw.FleetFile)
	p.commit("first render")
	names := nodesim.Pool{Name: lab.PoolName, Nodes: n}.NodeNames()
	p.until(scaled(3*time.Minute, n), "every node on the stable driver, in no upgrade", func(nodes map[string]*corev1.Node) bool {
		for _, nd := range nodes {
			if nd.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverStable {
				return false
			}
			if way == "gated" && nd.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" {
				return false
			}
			// Render turns the operator's upgrade policy off at rest, so
			// its state labels are gone (or upgrade-done while it turns).
			if st := nd.Labels[v1alpha1.LabelOperatorUpgradeState]; st != "" && st != v1alpha1.OperatorStateDone {
				return false
			}
		}
		return len(nodes) == n
	})
	p.operandsReady()
	handCordoned := []string{names[n/2], names[n/2+1]}
	for _, name := range handCordoned {
		p.patchNode(name, func(nd *corev1.Node) { nd.Spec.Unschedulable = true })
	}
	p.workload()

	// The good release; one node raises an XID right after its upgrade.
	var r peerRun
	before := p.clusterWrites(ctx)
	p.reqs.reads.Store(0)
	p.reqs.writes.Store(0)
	p.mu.Lock()
	p.peak = p.out()
	p.mu.Unlock()
	t0 := time.Now()
	p.gpufleet("start", lab.ReleaseGood, "-f", lw.FleetFile)
	p.push()
	xidNode := ""
	end := p.until(scaled(10*time.Minute, n), "the good rollout to end", func(nodes map[string]*corev1.Node) bool {
		if xidNode == "" {
			for _, name := range names[1:] {
				nd := nodes[name]
				if slices.Contains(handCordoned, name) || nd == nil || !upgraded(way, nd, lab.DriverGood) {
					continue
				}
				if err := lw.Sims["stg"].RaiseXID(ctx, name, 79); err == nil {
					xidNode = name
				}
				break
			}
		}
		return p.ended(nodes, lab.ReleaseGood, lab.DriverGood)
	})
	r.makespan = end.Sub(t0)
	r.reads = float64(p.reqs.reads.Load()) / float64(n)
	r.writes = float64(p.reqs.writes.Load()) / float64(n)
	r.cluster = (p.clusterWrites(ctx) - before) / float64(n)
	r.programs, err = p.lw.Testbed.Cluster("stg").Requests(t0, end)
	if err != nil {
		b.Fatalf("peer bench: %v", err)
	}
	op, ctl := r.programs[operatorProgram], r.programs[controllerProgram]
	r.operatorReads, r.operatorWrites = float64(op.Reads)/float64(n), float64(op.Writes)/float64(n)
	var upgraders []testbed.Requests
	switch way {
	case "operator":
		upgraders = []testbed.Requests{op}
	case "gpufleet":
		upgraders = []testbed.Requests{ctl}
	default:
		upgraders = []testbed.Requests{op, ctl}
	}
	for _, u := range upgraders {
		r.upgrader += float64(u.Writes) / float64(n)
		r.upgraderNodePods += float64(u.ByResource["nodes"]+u.ByResource["pods"]+u.ByResource["pods/eviction"]) / float64(n)
	}
	b.Logf("%s, %d nodes: requests over the good rollout by program: %s", way, n, programSummary(r.programs))
	r.timeline = p.tl.breakdown(t0, end, way)
	b.Logf("%s, %d nodes: where the good rollout's %.0f s went: %s", way, n, r.makespan.Seconds(), r.timeline)
	p.mu.Lock()
	r.peak = float64(p.peak)
	p.mu.Unlock()
	nodes := p.nodes()
	for _, name := range handCordoned {
		if !nodes[name].Spec.Unschedulable {
			r.uncordoned = true
		}
	}
	r.xid = xidOutcome(way, nodes[xidNode])

	// The bad release, from where the good one left the cluster: the good
	// one made stable first (the edit promote makes at the end).
	p.makeStable(lab.ReleaseGood)
	p.gpufleet("start", lab.ReleaseDrill, "-f", lw.FleetFile)
	// The drill's rollout may stall before Flux's health check looks.
	p.push("operators", "config")
	var reached int
	stable := time.Now()
	p.until(scaled(5*time.Minute, n), "the bad rollout to stop", func(nodes map[string]*corev1.Node) bool {
		got := p.reached(lab.DriverDrill)
		if got != reached {
			reached, stable = got, time.Now()
		}
		if p.way != "operator" {
			dr := &v1alpha1.DriverRollout{}
			if p.c.Get(ctx, client.ObjectKey{Name: lab.ReleaseDrill}, dr) == nil && dr.Status.Phase == v1alpha1.PhaseStalled {
				return true
			}
		}
		// The operator alone never stops by itself: it stops taking nodes
		// once failed ones fill its slots. Call it stopped when nothing
		// new got the bad driver for 30 s.
		return reached > 0 && time.Since(stable) > 30*time.Second
	})
	r.badReached = float64(reached)
	return r
}

// scaled is a wait sized for 24 nodes, grown with the node count: every
// way's makespan is about linear in it (parallel 4), and the operator
// gated by gpufleet took 144 s for 24 nodes on a busy 2-core machine.
func scaled(d time.Duration, nodes int) time.Duration {
	return d * time.Duration(max(nodes, 24)) / 24
}

// upgraded: the node finished its upgrade to version on this path.
func upgraded(way string, nd *corev1.Node, version string) bool {
	if nd.Labels[v1alpha1.LabelGFDDriverFull] != version {
		return false
	}
	switch way {
	case "operator":
		return nd.Labels[v1alpha1.LabelOperatorUpgradeState] == v1alpha1.OperatorStateDone
	default:
		return nd.Labels[v1alpha1.LabelPhase] == string(v1alpha1.NodeSoaking)
	}
}

func xidOutcome(way string, nd *corev1.Node) string {
	if nd == nil {
		return "no node reached it"
	}
	if way == "operator" {
		if nd.Spec.Unschedulable {
			return "cordoned"
		}
		return "nothing: left in service on " + nd.Labels[v1alpha1.LabelGFDDriverFull]
	}
	return strings.ToLower(nd.Labels[v1alpha1.LabelPhase]) + " on " + nd.Labels[v1alpha1.LabelGFDDriverFull]
}

// ended: the rollout of release is over: finished or stopped for the
// controller's ways, every node on version for the operator alone.
func (p *peerWorld) ended(nodes map[string]*corev1.Node, release, version string) bool {
	if p.way == "operator" {
		for _, nd := range nodes {
			if nd.Labels[v1alpha1.LabelGFDDriverFull] != version || nd.Labels[v1alpha1.LabelOperatorUpgradeState] != v1alpha1.OperatorStateDone {
				return false
			}
		}
		return len(nodes) == p.n
	}
	dr := &v1alpha1.DriverRollout{}
	if p.c.Get(context.Background(), client.ObjectKey{Name: release}, dr) != nil {
		return false
	}
	switch dr.Status.Phase {
	case v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithFailures, v1alpha1.PhaseStalled:
		return dr.Status.ObservedGeneration == dr.Generation
	}
	return false
}

// operandsReady waits until the ClusterPolicy is ready and every GPU node
// runs the operator's validator: the upgrade controller's validation state
// waits for that pod, and the ClusterPolicy deploys it only once the driver
// is ready.
func (p *peerWorld) operandsReady() {
	p.b.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = clusterPolicyReady(ctx, p.c)
		var pods corev1.PodList
		if p.c.List(ctx, &pods, client.InNamespace("gpu-operator"), client.MatchingLabels{"app": "nvidia-operator-validator"}) != nil {
			return false, nil
		}
		on := map[string]bool{}
		for _, pod := range pods.Items {
			if planner.PodReady(&pod) {
				on[pod.Spec.NodeName] = true
			}
		}
		last += fmt.Sprintf(", validator Ready on %d of %d nodes", len(on), p.n)
		return len(on) >= p.n, nil
	})
	if err != nil {
		p.b.Fatalf("%s/%d nodes: the operator's operands not ready: %v; last seen: ClusterPolicy %s", p.way, p.n, err, last)
	}
}

// clusterPolicyReady reports whether the ClusterPolicy says ready.
func clusterPolicyReady(ctx context.Context, c client.Client) (bool, string) {
	cp := &unstructured.Unstructured{}
	cp.SetAPIVersion("nvidia.com/v1")
	cp.SetKind("ClusterPolicy")
	if err := c.Get(ctx, client.ObjectKey{Name: "cluster-policy"}, cp); err != nil {
		return false, err.Error()
	}
	st, _, _ := unstructured.NestedString(cp.Object, "status", "state")
	return st == "ready", "state " + st
}

// reached counts the nodes a driver pod of version ever ran on.
func (p *peerWorld) reached(version string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, vs := range p.versions {
		if slices.Contains(vs, version) {
			n++
		}
	}
	return n
}

// watch keeps the GPU nodes and the driver pods in informers: the peak of
// nodes out of service and every version a node's driver pod ran are taken
// on each change, and until reads the nodes from the same cache. Polling
// lists instead (every 100 ms) loaded a 2-core API server with tens of MB
// a second at 100 nodes and slowed the very rollouts being measured.
func (p *peerWorld) watch() {
	p.b.Helper()
	cs, err := kubernetes.NewForConfig(p.lw.Testbed.Cluster("stg").Config)
	if err != nil {
		p.b.Fatal(err)
	}
	nodes := informers.NewSharedInformerFactory(cs, 0)
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("gpu-operator"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "app.kubernetes.io/component=" + v1alpha1.ComponentNVIDIADriver
		}))
	ni, pi := nodes.Core().V1().Nodes(), pods.Core().V1().Pods()
	p.nodeLister = ni.Lister()
	onNode := func() {
		p.mu.Lock()
		p.peak = max(p.peak, p.out())
		p.mu.Unlock()
	}
	onPod := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		v := nodesim.DriverPodVersion(pod)
		p.mu.Lock()
		if v != "" && pod.Spec.NodeName != "" && !slices.Contains(p.versions[pod.Spec.NodeName], v) {
			p.versions[pod.Spec.NodeName] = append(p.versions[pod.Spec.NodeName], v)
		}
		p.mu.Unlock()
	}
	if _, err := ni.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { onNode() },
		UpdateFunc: func(old, obj any) {
			onNode()
			a, _ := old.(*corev1.Node)
			b, _ := obj.(*corev1.Node)
			p.tl.observe(a, b)
		},
		DeleteFunc: func(any) { onNode() },
	}); err != nil {
		p.b.Fatal(err)
	}
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, obj any) { onPod(obj) },
	}); err != nil {
		p.b.Fatal(err)
	}
	stop := make(chan struct{})
	nodes.Start(stop)
	pods.Start(stop)
	p.lw.Go(func(ctx context.Context) {
		<-ctx.Done()
		close(stop)
		nodes.Shutdown()
		pods.Shutdown()
	})
	if !cache.WaitForCacheSync(stop, ni.Informer().HasSynced, pi.Informer().HasSynced) {
		p.b.Fatal("peer bench: the node and pod informers did not sync")
	}
}

// out counts the GPU nodes cordoned or NotReady now.
func (p *peerWorld) out() int {
	n := 0
	for _, nd := range p.nodes() {
		if nd.Spec.Unschedulable || !planner.NodeReady(nd) {
			n++
		}
	}
	return n
}

// nodes is the GPU nodes as the informer has them: read them, never edit.
func (p *peerWorld) nodes() map[string]*corev1.Node {
	// A lister's List reads its cache and never fails; no Fatal here, as
	// the informer's handlers call this off the benchmark's goroutine.
	list, _ := p.nodeLister.List(labels.Everything())
	out := map[string]*corev1.Node{}
	for _, nd := range list {
		if _, gpu := nd.Labels[v1alpha1.LabelGFDProduct]; gpu {
			out[nd.Name] = nd
		}
	}
	return out
}

// until polls cond over the GPU nodes and returns when it first held.
func (p *peerWorld) until(timeout time.Duration, what string, cond func(map[string]*corev1.Node) bool) time.Time {
	p.b.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if cond(p.nodes()) {
			at = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		p.b.Fatalf("%s/%d nodes: timed out after %s waiting for %s", p.way, p.n, timeout, what)
	}
	return at
}

func (p *peerWorld) gpufleet(args ...string) {
	p.b.Helper()
	var out bytes.Buffer
	if code := cli.Run(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 {
		p.b.Fatalf("gpufleet %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	}
}

// makeStable edits [promotion] so that release is stable and nothing rolls
// out, renders and commits.
func (p *peerWorld) makeStable(release string) {
	p.b.Helper()
	src, err := os.ReadFile(p.lw.FleetFile)
	if err != nil {
		p.b.Fatal(err)
	}
	var out []string
	inPromotion := false
	for l := range strings.SplitSeq(string(src), "\n") {
		if strings.HasPrefix(l, "[") {
			inPromotion = l == "[promotion]"
		}
		switch {
		case inPromotion && strings.HasPrefix(l, "stable = "):
			l = "stable = " + strconv.Quote(release)
		case inPromotion && strings.HasPrefix(l, "rollout = "):
			continue
		case inPromotion && strings.HasPrefix(l, "approved = "):
			l = "approved = []"
		}
		out = append(out, l)
	}
	if err := os.WriteFile(p.lw.FleetFile, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		p.b.Fatal(err)
	}
	p.gpufleet("render", "-f", p.lw.FleetFile)
	// The good rollout may have ended CompletedWithFailures, which its
	// lifecycle step reports as a failed health check: wait for the other
	// steps only.
	p.commitSteps(release+" is stable", "operators", "config")
}

func (p *peerWorld) commit(msg string) { p.commitSteps(msg) }

func (p *peerWorld) commitSteps(msg string, steps ...string) {
	p.b.Helper()
	play := p.lw.In(p.b)
	play.Git("add", "-A")
	play.Git("commit", "-q", "-m", msg)
	p.push(steps...)
}

// push pushes and waits for the steps the way has Ready (the operator alone
// has no controller to make its DriverRollout healthy).
func (p *peerWorld) push(steps ...string) {
	p.b.Helper()
	rev := p.lw.In(p.b).Push()
	if len(steps) == 0 {
		steps = []string{"operators", "config", "lifecycle"}
	}
	if p.way == "operator" {
		steps = slices.DeleteFunc(steps, func(s string) bool { return s == "lifecycle" })
	}
	for _, s := range steps {
		if err := p.lw.Testbed.Cluster("stg").WaitApplied(context.Background(), s, rev, 3*time.Minute); err != nil {
			p.b.Fatal(err)
		}
	}
}

func (p *peerWorld) patchNode(name string, edit func(*corev1.Node)) {
	p.b.Helper()
	nd := p.nodes()[name].DeepCopy()
	base := nd.DeepCopy()
	edit(nd)
	if err := p.c.Patch(context.Background(), nd, client.MergeFrom(base)); err != nil {
		p.b.Fatal(err)
	}
}

// workload runs three GPU workers guarded by a budget of one disruption.
func (p *peerWorld) workload() {
	p.b.Helper()
	ctx := context.Background()
	if err := lab.StartWorkload(ctx, p.c); err != nil {
		p.b.Fatal(err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, msg := lab.WorkloadBudgetReady(ctx, p.c)
		last = msg
		return ok, nil
	})
	if err != nil {
		p.b.Fatalf("the workload's budget: %v (%s)", err, last)
	}
}

// The programs' names in the audit log (their user agents up to the "/").
const (
	operatorProgram   = "gpu-operator"
	controllerProgram = "gpufleet-controller"
)

// programSummary writes each program's reads and writes, most writes first.
func programSummary(progs map[string]testbed.Requests) string {
	names := slices.Collect(maps.Keys(progs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(progs[b].Writes-progs[a].Writes, strings.Compare(a, b)) })
	var parts []string
	for _, name := range names {
		r := progs[name]
		parts = append(parts, fmt.Sprintf("%s %d reads, %d writes %v", name, r.Reads, r.Writes, r.ByResource))
	}
	return strings.Join(parts, "; ")
}

// clusterWrites is the API server's count of writes to nodes and pods
// (apiserver_request_total), whoever made them.
func (p *peerWorld) clusterWrites(ctx context.Context) float64 {
	p.b.Helper()
	cs, err := kubernetes.NewForConfig(p.lw.Testbed.Cluster("stg").Config)
	if err != nil {
		p.b.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		p.b.Fatalf("API server metrics: %v", err)
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "CREATE", "PATCH", "UPDATE", "DELETE", "APPLY", "POST", "PUT":
		default:
			continue
		}
		if (l["resource"] == "nodes" || l["resource"] == "pods") && (l["subresource"] == "" || l["subresource"] == "eviction") {
			v, _ := strconv.ParseFloat(value, 64)
			total += v
		}
	}
	return total
}
