package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// The OFED story runs on one cluster of four nodes with NICs the Network
// Operator manages and GPUDirect RDMA: the real GPU Operator makes the GPU
// driver pods (with their nvidia-peermem sidecar), the real k8s-operator-libs
// state machine is the Network Operator's OFED upgrade controller, and the
// step that turns the NicClusterPolicy into the OFED DaemonSet is played
// (package netopplay), as are the drivers inside the pods (package nodesim).
const (
	ofedNetworkOperator = "v25.4.0"
	ofedA               = "25.04-0.6.1.0-2"
	ofedB               = "25.04-0.6.1.0-3"
	// ofedBad never comes up on the simulated nodes.
	ofedBad = "25.04-0.6.1.0-9"

	// The releases, in the order the story rolls them out.
	relGPUOnly = "r2026-08" // the GPU driver alone, OFED unchanged
	relBoth    = "r2026-10" // both drivers
	relBadOFED = "r2026-12" // OFED alone, to a version that never comes up

	ofedMaxUnavailable = 2
)

// ofedFleet is the fleet file of TestOFED with its promotion: stable, and
// the release being rolled out ("" for none), approved or not.
func ofedFleet(stable, rollout string, approved bool) string {
	promotion := fmt.Sprintf("stable = %q\n", stable)
	if rollout != "" {
		promotion += fmt.Sprintf("rollout = { release = %q, wave = \"staging\" }\n", rollout)
	}
	if approved {
		promotion += fmt.Sprintf("approved = [\"%s/%s\"]\n", rollout, opCluster)
	} else {
		promotion += "approved = []\n"
	}
	release := func(name, driver, ofed string) string {
		return fmt.Sprintf("[releases.%s]\ngpu-operator = %q\nnetwork-operator = %q\ndriver = %q\nofed-driver = %q\n\n", name, lab.ChartVersion, ofedNetworkOperator, driver, ofed)
	}
	return `# fleet.toml of TestOFED: the OFED driver rolled with the GPU driver,
# one maintenance per node.
[charts]
mode = "manifests"
repository = "../shared/operators"

` + release(lab.ReleaseStable, lab.DriverStable, ofedA) +
		release(relGPUOnly, lab.DriverGood, ofedA) +
		release(relBoth, lab.DriverDrill, ofedB) +
		release(relBadOFED, lab.DriverDrill, ofedBad) +
		fmt.Sprintf(`[clusters.%[1]s]
environment = "staging"

[[clusters.%[1]s.pools]]
name = %[2]q
product = %[3]q
nodes = %[4]d
managed-nics = true
gpudirect-rdma = true

[[waves]]
name = "staging"
clusters = ["%[1]s"]

[policy]
canary-nodes = 1
auto-approve-canary = false
parallel-nodes = 2
max-unavailable = %[5]d
soak = "3s"
failure-budget = 0
drain-timeout = "60s"
install-timeout = "60s"
validate-timeout = "60s"

[promotion]
`, opCluster, lab.PoolName, lab.Product, opNodes, ofedMaxUnavailable) + promotion + "paused = false\n"
}

// nodeWatch samples the cluster's GPU nodes every 100 ms: how many times
// each was cordoned (schedulable → cordoned) and uncordoned, every rollout
// phase it entered in order, and the most cordoned at once.
type nodeWatch struct {
	mu        sync.Mutex
	cordons   map[string]int
	uncordons map[string]int
	// open are the in-flight phases a node was seen in while schedulable.
	open     map[string][]string
	phases   map[string][]string
	maxOut   int
	cordoned map[string]bool
	stop     context.CancelFunc
	done     chan struct{}
}

// watchNodes starts a nodeWatch of w's cluster; stop it with finish.
func (w *world) watchNodes() *nodeWatch {
	ctx, cancel := context.WithCancel(w.Context())
	nw := &nodeWatch{cordons: map[string]int{}, uncordons: map[string]int{}, open: map[string][]string{}, phases: map[string][]string{}, cordoned: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	first := true
	go func() {
		defer close(nw.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var nodes corev1.NodeList
			if err := w.Client(opCluster).List(ctx, &nodes); err == nil {
				nw.sample(nodes.Items, first)
				first = false
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nw
}

func (nw *nodeWatch) sample(nodes []corev1.Node, first bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	out := 0
	for _, n := range nodes {
		if _, gpu := n.Labels[v1alpha1.LabelGFDProduct]; !gpu {
			continue
		}
		switch was := nw.cordoned[n.Name]; {
		case first:
		case n.Spec.Unschedulable && !was:
			nw.cordons[n.Name]++
		case !n.Spec.Unschedulable && was:
			nw.uncordons[n.Name]++
		}
		if n.Spec.Unschedulable {
			out++
		}
		nw.cordoned[n.Name] = n.Spec.Unschedulable
		ph := n.Labels[v1alpha1.LabelPhase]
		if p := nw.phases[n.Name]; len(p) == 0 || p[len(p)-1] != ph {
			nw.phases[n.Name] = append(p, ph)
		}
		if !n.Spec.Unschedulable && v1alpha1.NodePhase(ph).InFlight() && !slices.Contains(nw.open[n.Name], ph) {
			nw.open[n.Name] = append(nw.open[n.Name], ph)
		}
	}
	nw.maxOut = max(nw.maxOut, out)
}

// finish stops the watch and returns what it saw.
func (nw *nodeWatch) finish() (cordons, uncordons map[string]int, phases, open map[string][]string, maxOut int) {
	nw.stop()
	<-nw.done
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return maps.Clone(nw.cordons), maps.Clone(nw.uncordons), maps.Clone(nw.phases), maps.Clone(nw.open), nw.maxOut
}

// ofedPods returns each GPU node's OFED pod as "uid version".
func (w *world) ofedPods() map[string]string {
	w.T.Helper()
	var pods corev1.PodList
	if err := w.Client(opCluster).List(context.Background(), &pods, client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
		w.T.Fatal(err)
	}
	out := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = string(p.UID) + " " + nodesim.OFEDPodVersion(p)
		}
	}
	return out
}

// waitOFED waits until every GPU node runs a Ready OFED pod of version and
// says mofed.wait=false.
func (w *world) waitOFED(version string, nodes []string) {
	w.T.Helper()
	w.Eventually(2*time.Minute, "OFED "+version+" Ready on every node", func() (bool, string) {
		var pods corev1.PodList
		if err := w.Client(opCluster).List(context.Background(), &pods, client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
			return false, err.Error()
		}
		ready := map[string]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if nodesim.OFEDPodVersion(p) == version && podIsReady(p) {
				ready[p.Spec.NodeName] = true
			}
		}
		gpu := w.gpuNodes(opCluster)
		var missing []string
		for _, n := range nodes {
			if !ready[n] || gpu[n] == nil || gpu[n].Labels[v1alpha1.LabelMOFEDWait] != "false" {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not on OFED %s yet: %v", version, missing)
	})
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gpuJobs puts one GPU job pod on each node (a bare pod: evicted, it is
// gone, so each is evicted at most once and its absence says it was) and
// waits until they run.
func (w *world) gpuJobs(nodes []string, tag string) []client.ObjectKey {
	w.T.Helper()
	ctx := context.Background()
	c := w.Client(opCluster)
	var keys []client.ObjectKey
	for _, n := range nodes {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "job-" + tag + "-" + n, Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "train", Image: "trainer:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{nodesim.ResourceGPU: resource.MustParse("1")}}}}},
		}
		if err := c.Create(ctx, p); err != nil {
			w.T.Fatal(err)
		}
		keys = append(keys, client.ObjectKeyFromObject(p))
	}
	w.Eventually(time.Minute, "the GPU jobs running", func() (bool, string) {
		for _, k := range keys {
			p := &corev1.Pod{}
			if err := c.Get(ctx, k, p); err != nil || p.Status.Phase != corev1.PodRunning {
				return false, k.Name + " not running"
			}
		}
		return true, ""
	})
	return keys
}

// commitPromotion writes the fleet file with a promotion, renders,
// commits, pushes and waits until the cluster applied it.
func (w *world) commitPromotion(stable, rollout string, approved bool, msg string) {
	w.T.Helper()
	src := strings.Replace(ofedFleet(stable, rollout, approved), lab.PlaceholderCharts, strconv.Quote(w.Operators), 1)
	w.commitFleet(src, msg)
}

// TestOFED rolls three releases on a pool with managed NICs and GPUDirect
// RDMA: the GPU driver alone (OFED untouched), both drivers (each node
// cordoned and drained once, OFED before the GPU driver, canary and
// approval, maxUnavailable), and an OFED version that never comes up (the
// canary stops the rollout, the rest untouched).
func TestOFED(t *testing.T) {
	t.Parallel()
	w := newWorld(t, lab.Options{
		Clusters: []string{opCluster}, FleetTOML: []byte(ofedFleet(lab.ReleaseStable, "", false)), ChartVersion: lab.ChartVersion,
		Pool:            nodesim.Pool{Name: lab.PoolName, Product: lab.Product, Nodes: opNodes, Driver: lab.DriverStable, ManagedNICs: true},
		NetworkOperator: ofedNetworkOperator, BadOFED: []string{ofedBad},
	})
	s := &story{t: t, w: w}
	names := nodesim.Pool{Name: lab.PoolName, Nodes: opNodes}.NodeNames()

	s.step("first render: OFED "+ofedA+" on every node, every node held, the upgrade machine off at rest", func(w *world) {
		src, err := os.ReadFile(w.FleetFile)
		if err != nil {
			w.T.Fatal(err)
		}
		w.commitFleet(string(src), "gpufleet render: first render, OFED "+ofedA)
		w.WaitRollout(opCluster, lab.ReleaseStable, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.waitOFED(ofedA, names)
		w.Eventually(time.Minute, "every node held with the OFED skip label", func() (bool, string) {
			var unheld []string
			for name, n := range w.gpuNodes(opCluster) {
				if n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" {
					unheld = append(unheld, name)
				}
			}
			return len(unheld) == 0, fmt.Sprint("not held: ", unheld)
		})
	})

	s.step("a release of the GPU driver alone never touches OFED", func(w *world) {
		before := w.ofedPods()
		w.commitPromotion(lab.ReleaseStable, relGPUOnly, false, "start "+relGPUOnly)
		w.WaitRollout(opCluster, relGPUOnly, 3*time.Minute, v1alpha1.PhaseWaitingForApproval)
		w.commitPromotion(lab.ReleaseStable, relGPUOnly, true, "approve "+relGPUOnly+"/"+opCluster)
		w.WaitRollout(opCluster, relGPUOnly, 4*time.Minute, v1alpha1.PhaseCompleted)
		if after := w.ofedPods(); !maps.Equal(before, after) {
			w.T.Errorf("OFED pods changed by a release of the GPU driver alone:\nbefore %v\nafter  %v", before, after)
		}
		for name, n := range w.gpuNodes(opCluster) {
			if n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" || n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverGood {
				w.T.Errorf("%s: skip %q driver %q, want held on %s", name, n.Labels[v1alpha1.LabelOFEDUpgradeSkip], n.Labels[v1alpha1.LabelGFDDriverFull], lab.DriverGood)
			}
		}
	})

	var jobs []client.ObjectKey
	var watch *nodeWatch
	var began time.Time
	canary := ""
	s.step("both drivers: the canary alone, OFED first, then its GPU driver", func(w *world) {
		jobs = w.gpuJobs(names, "both")
		before := w.ofedPods()
		watch = w.watchNodes()
		began = time.Now()
		w.commitPromotion(relGPUOnly, relBoth, false, "start "+relBoth)
		ro := w.WaitRollout(opCluster, relBoth, 4*time.Minute, v1alpha1.PhaseWaitingForApproval)
		if len(ro.Status.Canary.Nodes) != 1 {
			w.T.Fatalf("canary %v, want one node", ro.Status.Canary.Nodes)
		}
		canary = ro.Status.Canary.Nodes[0]
		after := w.ofedPods()
		for _, n := range names {
			changed := before[n] != after[n]
			if changed != (n == canary) {
				w.T.Errorf("%s (canary %s): OFED pod %q → %q", n, canary, before[n], after[n])
			}
		}
		if !strings.HasSuffix(after[canary], " "+ofedB) {
			w.T.Errorf("canary %s runs OFED %q, want %s", canary, after[canary], ofedB)
		}
	})

	s.step("approve: the others, each in one maintenance", func(w *world) {
		w.commitPromotion(relGPUOnly, relBoth, true, "approve "+relBoth+"/"+opCluster)
		w.WaitRollout(opCluster, relBoth, 5*time.Minute, v1alpha1.PhaseCompleted)
		w.waitOFED(ofedB, names)
	})

	s.check("each node cordoned and drained once, never more than maxUnavailable out", func(w *world) {
		cordons, uncordons, phases, open, maxOut := watch.finish()
		for _, n := range names {
			drains := 0
			for _, p := range phases[n] {
				if p == string(v1alpha1.NodeDraining) {
					drains++
				}
			}
			// Cordoned from its drain to its end: the Network Operator's
			// upgrade controller uncordons, at the end of the OFED swap, a
			// node it does not know was cordoned before.
			if cordons[n] != 1 || uncordons[n] != 1 || drains != 1 {
				w.T.Errorf("%s: cordoned %d times, uncordoned %d times, Draining %d times (phases %v), want once each", n, cordons[n], uncordons[n], drains, phases[n])
			}
			if len(open[n]) > 0 {
				w.T.Errorf("%s: schedulable while %v: its maintenance lost its cordon", n, open[n])
			}
		}
		w.T.Logf("cordons per node %v, uncordons %v, most cordoned at once %d, phases %v", cordons, uncordons, maxOut, phases)
		if maxOut > ofedMaxUnavailable {
			w.T.Errorf("%d nodes cordoned at once, maxUnavailable %d", maxOut, ofedMaxUnavailable)
		}
		// Each node's one GPU job was evicted by its one drain.
		for _, k := range jobs {
			p := &corev1.Pod{}
			if err := w.Client(opCluster).Get(context.Background(), k, p); err == nil {
				w.T.Errorf("job %s still on node %s: not evicted", k.Name, p.Spec.NodeName)
			}
		}
		for name, n := range w.gpuNodes(opCluster) {
			if n.Spec.Unschedulable || n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" || n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverDrill {
				w.T.Errorf("%s: cordoned %t, skip %q, driver %q: want back in service, held, on %s", name, n.Spec.Unschedulable,
					n.Labels[v1alpha1.LabelOFEDUpgradeSkip], n.Labels[v1alpha1.LabelGFDDriverFull], lab.DriverDrill)
			}
		}
	})

	s.check("OFED before the GPU driver on every node, its driver pod started after it (peermem)", func(w *world) {
		recs, err := nodesim.InstallRecords(context.Background(), w.Client(opCluster))
		if err != nil {
			w.T.Fatal(err)
		}
		ofedAt, gpuAt := map[string]time.Time{}, map[string]time.Time{}
		for _, r := range recs {
			if r.At.Before(began) {
				continue
			}
			switch {
			case r.Reason == nodesim.ReasonOFEDReady && r.Version == ofedB:
				ofedAt[r.Node] = r.At
			case r.Reason == nodesim.ReasonDriverInstall && r.Version == lab.DriverDrill:
				if _, seen := gpuAt[r.Node]; !seen {
					gpuAt[r.Node] = r.At
				}
			}
		}
		for _, n := range names {
			o, g := ofedAt[n], gpuAt[n]
			if o.IsZero() || g.IsZero() || !o.Before(g) {
				w.T.Errorf("%s: OFED %s loaded at %s, GPU driver %s install began at %s: want OFED first", n, ofedB, o.Format(time.StampMicro), lab.DriverDrill, g.Format(time.StampMicro))
			}
		}
	})

	s.step("an OFED that never comes up stops the rollout at its canary; the rest untouched", func(w *world) {
		before := w.ofedPods()
		w.commitPromotion(relBoth, relBadOFED, false, "start "+relBadOFED)
		ro := w.WaitRollout(opCluster, relBadOFED, 4*time.Minute, v1alpha1.PhaseStalled)
		if len(ro.Status.Canary.Nodes) != 1 {
			w.T.Fatalf("canary %v, want one node", ro.Status.Canary.Nodes)
		}
		bad := ro.Status.Canary.Nodes[0]
		// Some time for anything else to move, which nothing must.
		time.Sleep(5 * time.Second)
		after := w.ofedPods()
		for name, n := range w.gpuNodes(opCluster) {
			if name == bad {
				if ph := n.Labels[v1alpha1.LabelPhase]; ph != string(v1alpha1.NodeRollingBack) && ph != string(v1alpha1.NodeQuarantined) {
					w.T.Errorf("canary %s in phase %q, want rolling back or quarantined", name, ph)
				}
				continue
			}
			if before[name] != after[name] || n.Spec.Unschedulable || n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" ||
				slices.Contains([]string{string(v1alpha1.NodeDraining), string(v1alpha1.NodeInstalling)}, n.Labels[v1alpha1.LabelPhase]) {
				w.T.Errorf("%s touched: OFED pod %q → %q, cordoned %t, skip %q, phase %q", name, before[name], after[name],
					n.Spec.Unschedulable, n.Labels[v1alpha1.LabelOFEDUpgradeSkip], n.Labels[v1alpha1.LabelPhase])
			}
		}
	})
}
