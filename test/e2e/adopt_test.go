package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// The clusters of TestAdoptRunningOperator: the one gpufleet init adopts,
// and beside it the same cluster described the way a fleet file had to
// describe it before init existed (no [clusters.<name>.gpu-operator]
// table: NVIDIADriver objects rendered for an operator whose ClusterPolicy
// runs the driver), which shows what the adoption must never do.
const (
	adoptCluster = "adopt"
	naiveCluster = "naive"
	adoptNodes   = 4
	// relNext is the release the adopted cluster is promoted to.
	relNext = "next"
)

// disruptions samples one cluster every 200 ms and records everything that
// would disrupt GPU work: a driver pod that goes (deleted, or being
// deleted), a workload pod that goes (evicted or deleted), a GPU node
// cordoned, and, per sample, how many GPU nodes have no Ready driver pod.
// Each event carries the time it was seen, so a check can ask about a
// period of the story.
type disruptions struct {
	c client.Client

	mu          sync.Mutex
	samples     int
	driverPods  map[types.UID]string // every driver pod seen: node/name
	workload    map[types.UID]string
	driverGone  []event
	workGone    []event
	cordoned    []event
	wasCordoned map[string]bool
	// noDriver is, per sample, when it was taken and how many GPU nodes
	// had no Ready driver pod.
	noDriver []count
}

type event struct {
	at   time.Time
	what string
}

type count struct {
	at time.Time
	n  int
}

func newDisruptions(c client.Client) *disruptions {
	return &disruptions{c: c, driverPods: map[types.UID]string{}, workload: map[types.UID]string{}, wasCordoned: map[string]bool{}}
}

func (d *disruptions) run(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		d.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (d *disruptions) sample(ctx context.Context) {
	var nodes corev1.NodeList
	var drivers, work corev1.PodList
	if d.c.List(ctx, &nodes) != nil ||
		d.c.List(ctx, &drivers, client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}) != nil ||
		d.c.List(ctx, &work, client.MatchingLabels{"app": lab.WorkloadApp}) != nil {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.samples++
	seen := func(pods []corev1.Pod, known map[types.UID]string, gone *[]event) {
		live := map[types.UID]bool{}
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			live[p.UID] = true
			if _, ok := known[p.UID]; !ok {
				known[p.UID] = p.Spec.NodeName + "/" + p.Name
			}
		}
		for uid, what := range known {
			if !live[uid] {
				*gone = append(*gone, event{at: now, what: what})
				delete(known, uid)
			}
		}
	}
	seen(drivers.Items, d.driverPods, &d.driverGone)
	seen(work.Items, d.workload, &d.workGone)
	readyOn := map[string]bool{}
	for _, p := range drivers.Items {
		if p.DeletionTimestamp == nil && planner.PodReady(&p) {
			readyOn[p.Spec.NodeName] = true
		}
	}
	without := 0
	for _, n := range nodes.Items {
		if _, gpu := n.Labels[v1alpha1.LabelGFDProduct]; !gpu {
			continue
		}
		if !readyOn[n.Name] {
			without++
		}
		if n.Spec.Unschedulable && !d.wasCordoned[n.Name] {
			d.cordoned = append(d.cordoned, event{at: now, what: n.Name})
		}
		d.wasCordoned[n.Name] = n.Spec.Unschedulable
	}
	d.noDriver = append(d.noDriver, count{at: now, n: without})
}

// between returns what happened from from to to (zero: now).
func (d *disruptions) between(from, to time.Time) (driverGone, workGone, cordoned []string, maxNoDriver, samples int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := func(t time.Time) bool { return !t.Before(from) && (to.IsZero() || !t.After(to)) }
	pick := func(evs []event) []string {
		var out []string
		for _, e := range evs {
			if in(e.at) {
				out = append(out, e.what+" at "+e.at.Format("15:04:05.000"))
			}
		}
		return out
	}
	for _, c := range d.noDriver {
		if in(c.at) {
			samples++
			maxNoDriver = max(maxNoDriver, c.n)
		}
	}
	return pick(d.driverGone), pick(d.workGone), pick(d.cordoned), maxNoDriver, samples
}

// goneWithin reports the driver pods that went between from and now, and
// how far apart the first and the last went.
func (d *disruptions) goneWithin(from time.Time) (int, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first, last time.Time
	n := 0
	for _, e := range d.driverGone {
		if e.at.Before(from) {
			continue
		}
		if n == 0 {
			first = e.at
		}
		last = e.at
		n++
	}
	return n, last.Sub(first)
}

// newAdoptWorld starts the two clusters of TestAdoptRunningOperator, each
// with adoptNodes GPU nodes as a fleet that never ran gpufleet has them:
// NFD's and GFD's labels, driver lab.DriverStable loaded, no gpufleet label. Flux
// watches each cluster's folder of the fleet repository, which is empty
// until the story commits what init and render wrote.
func newAdoptWorld(t *testing.T) *world {
	t.Helper()
	return newWorld(t, lab.Options{
		Clusters: []string{adoptCluster, naiveCluster},
		// Replaced by what gpufleet init writes.
		FleetTOML:    []byte("# written by gpufleet init\n"),
		ChartVersion: lab.ChartVersion,
		Pool:         nodesim.Pool{Name: lab.PoolName, Product: lab.Product, Nodes: adoptNodes, Driver: lab.DriverStable, Provisioned: true},
	})
}

// driverDaemonSet returns the ClusterPolicy's driver DaemonSet of cluster,
// or nil.
func (w *world) driverDaemonSet(cluster string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	if err := w.Client(cluster).Get(context.Background(), client.ObjectKey{Namespace: "gpu-operator", Name: "nvidia-driver-daemonset"}, ds); err != nil {
		return nil
	}
	return ds
}

// readyDriverPods returns, per GPU node of cluster, the UID of its Ready
// driver pod and the version it runs.
func (w *world) readyDriverPods(cluster string) map[string]string {
	w.T.Helper()
	var pods corev1.PodList
	if err := w.Client(cluster).List(context.Background(), &pods, client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
		w.T.Fatal(err)
	}
	out := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && planner.PodReady(p) {
			out[p.Spec.NodeName] = string(p.UID) + " " + nodesim.DriverPodVersion(p)
		}
	}
	return out
}

// TestAdoptRunningOperator brings a running GPU fleet under gpufleet: the
// GPU Operator v25.3.4 installed with Helm in its default mode (the
// ClusterPolicy manages one driver DaemonSet, a generated release name),
// GPU workloads under a PodDisruptionBudget on its nodes, no gpufleet
// label anywhere. gpufleet init reads it; the fleet file renders,
// validates and lints clean; Flux applies it, and a recorder sampling every
// 200 ms sees no driver pod replaced, no workload pod evicted and no node
// cordoned; then a rollout to a new driver completes under the policy,
// never more than maxUnavailable nodes without a Ready driver pod. Beside
// it, the same cluster rendered the way a fleet file without init's table
// renders it (what every gpufleet did before) has every driver pod of the
// cluster deleted at once by the real operator: the check can fail.
func TestAdoptRunningOperator(t *testing.T) {
	t.Parallel()
	w := newAdoptWorld(t)
	s := &story{t: t, w: w}
	ctx := context.Background()
	releases := map[string]string{}
	recs := map[string]*disruptions{}
	before := map[string]map[string]string{}
	var applied time.Time

	s.step("the GPU Operator is installed with Helm in its default mode, under a generated name", func(w *world) {
		for _, cluster := range []string{adoptCluster, naiveCluster} {
			name, err := helmInstall(ctx, w.Testbed.Kubeconfig, cluster, w.Operators, "gpu-operator", lab.ChartVersion, "gpu-operator",
				map[string]any{"driver": map[string]any{"version": lab.DriverStable}}, w.T.Logf)
			if err != nil {
				w.T.Fatal(err)
			}
			releases[cluster] = name
			w.T.Logf("%s: Helm release %s", cluster, name)
		}
		for _, cluster := range []string{adoptCluster, naiveCluster} {
			w.Eventually(3*time.Minute, cluster+": a Ready driver pod of the ClusterPolicy's DaemonSet on every GPU node", func() (bool, string) {
				got := w.readyDriverPods(cluster)
				return len(got) == adoptNodes && w.driverDaemonSet(cluster) != nil, fmt.Sprint(got)
			})
			w.Eventually(3*time.Minute, cluster+": the ClusterPolicy ready", func() (bool, string) {
				return clusterPolicyReady(ctx, w.Client(cluster))
			})
		}
	})

	s.step("GPU workloads under a PodDisruptionBudget run on the adopted cluster's nodes; the recorders start", func(w *world) {
		w.CreateWorkload(adoptCluster)
		for _, cluster := range []string{adoptCluster, naiveCluster} {
			d := newDisruptions(w.Client(cluster))
			recs[cluster] = d
			w.Go(d.run)
			before[cluster] = w.readyDriverPods(cluster)
		}
	})

	s.step("gpufleet init reads the clusters and writes the fleet file", func(w *world) {
		out, code := w.Gpufleet("init", "-f", w.FleetFile, "--force", "--kubeconfig", w.Testbed.Kubeconfig,
			"--context", adoptCluster, "--context", naiveCluster, "--release", lab.ReleaseStable,
			"--wave", "first="+adoptCluster, "--wave", "second="+naiveCluster,
			"--chart-mode", "manifests", "--chart-repository", w.Operators)
		if code != 0 {
			w.T.Fatalf("init exit %d:\n%s", code, out)
		}
		src := w.readFleet()
		for _, want := range []string{
			"[clusters." + adoptCluster + ".gpu-operator]",
			`release = "` + releases[adoptCluster] + `"`,
			`driver-management = "clusterpolicy"`,
			`driver = "` + lab.DriverStable + `"`,
			`gpu-operator = "` + lab.ChartVersion + `"`,
			fmt.Sprintf("nodes = %d", adoptNodes),
			`actuator = "gpu-operator"`,
		} {
			if !strings.Contains(src, want) {
				w.T.Errorf("init's fleet file lacks %q:\n%s", want, src)
			}
		}
	})

	s.step("the naive cluster as a fleet file without init's table describes it", func(w *world) {
		src := w.readFleet()
		cut := regexp.MustCompile(`(?m)^\[clusters\.` + naiveCluster + `\.gpu-operator\]\n(?:[a-z-]+ = .*\n)*|^\[policy\.clusters\.` + naiveCluster + `\]\n(?:[a-z-]+ = .*\n)*`)
		naive := cut.ReplaceAllString(src, "")
		if strings.Count(src, "\n")-strings.Count(naive, "\n") < 5 {
			w.T.Fatalf("the naive cluster's table and policy were not cut:\n%s", naive)
		}
		w.writeFleet(naive)
	})

	s.step("a quick policy for the test, and the next release beside the stable one", func(w *world) {
		src := w.readFleet()
		for _, r := range [][2]string{
			{`soak = "30m"`, `soak = "10s"`},
			{`auto-approve-canary = false`, `auto-approve-canary = true`},
			{`drain-timeout = "30m"`, `drain-timeout = "2m"`},
			{`install-timeout = "20m"`, `install-timeout = "2m"`},
			{`validate-timeout = "10m"`, `validate-timeout = "2m"`},
		} {
			if !strings.Contains(src, r[0]) {
				w.T.Fatalf("init's policy lacks %q", r[0])
			}
			src = strings.Replace(src, r[0], r[1], 1)
		}
		next := fmt.Sprintf("[releases.%s]\ngpu-operator = %q\ndriver = %q\n\n", relNext, lab.ChartVersion, lab.DriverGood)
		src = strings.Replace(src, "# ---------------------------------------------------------------- clusters", next+"# ---------------------------------------------------------------- clusters", 1)
		w.writeFleet(src)
	})

	s.step("render, validate and lint: clean", func(w *world) {
		if out, code := w.Gpufleet("render", "-f", w.FleetFile); code != 0 {
			w.T.Fatalf("render exit %d:\n%s", code, out)
		}
		if out, code := w.Gpufleet("validate", "-f", w.FleetFile, "--charts", w.Operators); code != 0 {
			w.T.Fatalf("validate exit %d:\n%s", code, out)
		}
		if out, code := w.Gpufleet("lint", w.Dir); code != 0 {
			w.T.Fatalf("lint exit %d:\n%s", code, out)
		}
	})

	s.step("Flux applies it", func(w *world) {
		w.Git("add", "-A")
		w.Git("commit", "-q", "-m", "gpufleet: adopt the running fleet")
		applied = time.Now()
		rev := w.Push()
		w.WaitApplied(adoptCluster, rev)
		w.WaitApplied(naiveCluster, rev)
		w.WaitRollout(adoptCluster, lab.ReleaseStable, 2*time.Minute, v1alpha1.PhaseCompleted)
		w.Eventually(time.Minute, "every node of the adopted cluster held with the skip label and settled", func() (bool, string) {
			var bad []string
			for name, n := range w.gpuNodes(adoptCluster) {
				if n.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" || n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) {
					bad = append(bad, fmt.Sprintf("%s (skip %q, phase %q)", name, n.Labels[v1alpha1.LabelOperatorUpgradeSkip], n.Labels[v1alpha1.LabelPhase]))
				}
			}
			slices.Sort(bad)
			return len(bad) == 0, fmt.Sprint(bad)
		})
		// What happens after the apply has time to happen.
		time.Sleep(15 * time.Second)
	})

	s.check("adopted: no driver pod replaced, no workload evicted, no node cordoned", func(w *world) {
		drivers, work, cordoned, _, samples := recs[adoptCluster].between(time.Time{}, time.Time{})
		w.T.Logf("%s: %d samples over the adoption", adoptCluster, samples)
		if len(drivers) > 0 || len(work) > 0 || len(cordoned) > 0 {
			w.T.Errorf("the adoption disrupted the cluster: driver pods gone %v, workload pods gone %v, nodes cordoned %v", drivers, work, cordoned)
		}
		if got := w.readyDriverPods(adoptCluster); !mapsEqual(got, before[adoptCluster]) {
			w.T.Errorf("the driver pods changed:\nbefore %v\nafter  %v", before[adoptCluster], got)
		}
		if w.driverDaemonSet(adoptCluster) == nil {
			w.T.Error("nvidia-driver-daemonset is gone")
		}
		cp := &unstructured.Unstructured{}
		cp.SetAPIVersion("nvidia.com/v1")
		cp.SetKind("ClusterPolicy")
		if err := w.Client(adoptCluster).Get(ctx, client.ObjectKey{Name: "cluster-policy"}, cp); err != nil {
			w.T.Fatal(err)
		}
		if crd, _, _ := unstructured.NestedBool(cp.Object, "spec", "driver", "useNvidiaDriverCRD"); crd {
			w.T.Error("the ClusterPolicy was switched to NVIDIADriver objects")
		}
		if out, code := w.Gpufleet("render", "-f", w.FleetFile, "--check"); code != 0 {
			w.T.Errorf("render --check exit %d: what Flux runs is not what the fleet file renders:\n%s", code, out)
		}
	})

	s.check("naive: the operator deletes every driver pod of the cluster at once", func(w *world) {
		n, spread := recs[naiveCluster].goneWithin(applied)
		w.T.Logf("%s: %d driver pods of the ClusterPolicy's DaemonSet went within %s of each other", naiveCluster, n, spread)
		if n < adoptNodes {
			w.T.Errorf("%d of %d driver pods deleted: the negative control did not show the danger", n, adoptNodes)
		}
		if spread > 5*time.Second {
			w.T.Errorf("the driver pods went over %s, not at once", spread)
		}
	})

	s.step("start the next release on the adopted cluster", func(w *world) {
		if out, code := w.Mutate("start", relNext); code != 0 {
			w.T.Fatalf("start exit %d:\n%s", code, out)
		}
		w.WaitApplied(adoptCluster, w.Push())
	})

	var rolled time.Time
	s.check("the rollout completes under the policy: never more than maxUnavailable nodes without a Ready driver pod", func(w *world) {
		rolled = time.Now()
		w.WaitRollout(adoptCluster, relNext, 8*time.Minute, v1alpha1.PhaseCompleted)
		w.WaitDrivers(adoptCluster, lab.DriverGood, time.Minute)
		_, _, _, maxNoDriver, samples := recs[adoptCluster].between(rolled, time.Time{})
		w.T.Logf("%s: at most %d GPU nodes without a Ready driver pod over %d samples of the rollout", adoptCluster, maxNoDriver, samples)
		if maxNoDriver > 1 {
			w.T.Errorf("%d GPU nodes without a Ready driver pod at once, maxUnavailable 1", maxNoDriver)
		}
		for node, v := range w.readyDriverPods(adoptCluster) {
			if !strings.HasSuffix(v, " "+lab.DriverGood) {
				w.T.Errorf("%s runs %s, want %s", node, v, lab.DriverGood)
			}
		}
	})
}

// readFleet returns the fleet file's text.
func (w *world) readFleet() string {
	w.T.Helper()
	b, err := os.ReadFile(w.FleetFile)
	if err != nil {
		w.T.Fatal(err)
	}
	return string(b)
}

// writeFleet writes the fleet file.
func (w *world) writeFleet(src string) {
	w.T.Helper()
	if err := os.WriteFile(w.FleetFile, []byte(src), 0o644); err != nil {
		w.T.Fatal(err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
