package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// The operator actuator's story runs on one cluster of four nodes: a canary,
// a node an admin cordoned, one that raises an XID in its soak, and one the
// spent failure budget keeps from ever being released.
const (
	opCluster = "stg"
	opNodes   = 4
	opSoak    = 15 * time.Second
)

// operatorFleet is the fleet file of TestOperatorActuator with its one
// maintenance window (HH:MM, UTC). The soak is long enough for the test to
// raise an XID on a soaking node.
func operatorFleet(winStart, winEnd string) string {
	return fmt.Sprintf(`# fleet.toml of TestOperatorActuator: the GPU Operator's own upgrade
# controller moves the nodes, gpufleet releases them one by one.
[charts]
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

[clusters.%[5]s]
environment = "staging"

[[clusters.%[5]s.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = %[6]d

[[waves]]
name = "staging"
clusters = ["%[5]s"]

[policy]
actuator = "gpu-operator"
canary-nodes = 1
auto-approve-canary = false
parallel-nodes = 1
max-unavailable = 2
soak = "%[7]s"
failure-budget = 0
drain-timeout = "60s"
install-timeout = "60s"
validate-timeout = "60s"

[[policy.windows]]
days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
start = "%[8]s"
end = "%[9]s"
time-zone = "UTC"

[policy.health]
node-conditions = ["GpuXidError", "GpuEccError"]
event-reasons = ["XidError", "EccError"]

[promotion]
stable = "%[1]s"
approved = []
paused = false
`, lab.ReleaseStable, lab.DriverStable, lab.ReleaseGood, lab.DriverGood, opCluster, opNodes, opSoak, winStart, winEnd)
}

// windowAround is a window that holds now (open) or that does not (shut).
func windowAround(open bool) (string, string) {
	now := time.Now().UTC()
	if open {
		return now.Add(-time.Hour).Format("15:04"), now.Add(3 * time.Hour).Format("15:04")
	}
	return now.Add(3 * time.Hour).Format("15:04"), now.Add(4 * time.Hour).Format("15:04")
}

// newOperatorWorld starts one cluster whose fleet file has the
// gpu-operator actuator.
func newOperatorWorld(t *testing.T) *world {
	t.Helper()
	ws, we := windowAround(false)
	return newOneClusterWorld(t, operatorFleet(ws, we))
}

// newOneClusterWorld starts one cluster, opCluster, of opNodes nodes on the
// stable driver, with fleet as its fleet file, and a recorder sampling it
// every 100 ms.
func newOneClusterWorld(t *testing.T, fleet string) *world {
	t.Helper()
	return newWorld(t, lab.Options{
		Clusters: []string{opCluster}, FleetTOML: []byte(fleet), ChartVersion: lab.ChartVersion,
		Pool:   nodesim.Pool{Name: lab.PoolName, Product: lab.Product, Nodes: opNodes, Driver: lab.DriverStable},
		Record: 100 * time.Millisecond,
	})
}

// gpuNodes returns the cluster's GPU nodes by name.
func (w *world) gpuNodes(cluster string) map[string]*corev1.Node {
	w.T.Helper()
	var nodes corev1.NodeList
	if err := w.Client(cluster).List(context.Background(), &nodes); err != nil {
		w.T.Fatal(err)
	}
	out := map[string]*corev1.Node{}
	for i := range nodes.Items {
		if _, gpu := nodes.Items[i].Labels[v1alpha1.LabelGFDProduct]; gpu {
			out[nodes.Items[i].Name] = &nodes.Items[i]
		}
	}
	return out
}

// released returns the GPU nodes of cluster the operator is upgrading or
// that lack the skip label, with what they say.
func (w *world) released(cluster string, except ...string) []string {
	var out []string
	for name, n := range w.gpuNodes(cluster) {
		if slices.Contains(except, name) {
			continue
		}
		st := n.Labels[v1alpha1.LabelOperatorUpgradeState]
		if n.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" || v1alpha1.OperatorUpgrading(st) {
			out = append(out, fmt.Sprintf("%s (state %q, skip %q)", name, st, n.Labels[v1alpha1.LabelOperatorUpgradeSkip]))
		}
	}
	slices.Sort(out)
	return out
}

// holdsFor fails the test when any GPU node but except is released during d.
func (w *world) holdsFor(cluster string, d time.Duration, except ...string) {
	w.T.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if r := w.released(cluster, except...); len(r) > 0 {
			w.T.Fatalf("released while they must be held: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// commitFleet writes the fleet file, renders, commits and pushes it, and
// waits until the cluster applied it.
func (w *world) commitFleet(src, msg string) {
	w.T.Helper()
	if err := os.WriteFile(w.FleetFile, []byte(src), 0o644); err != nil {
		w.T.Fatal(err)
	}
	if _, code := w.Gpufleet("render", "-f", w.FleetFile); code != 0 {
		w.T.Fatalf("render exit %d", code)
	}
	w.Git("add", "-A")
	w.Git("commit", "-q", "-m", msg)
	w.WaitApplied(opCluster, w.Push())
}

// TestOperatorActuator plays a release on the gpu-operator actuator against
// the real GPU Operator v25.3.4: its own upgrade controller cordons, drains,
// restarts the driver pods and uncordons, and gpufleet-controller releases
// the nodes one by one with the operator's skip label. One named check per
// behaviour of the path.
func TestOperatorActuator(t *testing.T) {
	t.Parallel()
	w := newOperatorWorld(t)
	s := &story{t: t, w: w}
	names := nodesim.Pool{Name: lab.PoolName, Nodes: opNodes}.NodeNames()
	canary, cordoned, xid, last := names[0], names[1], names[2], names[3]

	s.step("render and first sync: the operator's upgrade policy is written but off at rest, one NVIDIADriver per pool", func(w *world) {
		src, err := os.ReadFile(w.FleetFile)
		if err != nil {
			w.T.Fatal(err)
		}
		w.commitFleet(string(src), "gpufleet render: first render, gpu-operator actuator")
		cp := &unstructured.Unstructured{}
		cp.SetAPIVersion("nvidia.com/v1")
		cp.SetKind("ClusterPolicy")
		if err := w.Client(opCluster).Get(context.Background(), client.ObjectKey{Name: "cluster-policy"}, cp); err != nil {
			w.T.Fatal(err)
		}
		auto, _, _ := unstructured.NestedBool(cp.Object, "spec", "driver", "upgradePolicy", "autoUpgrade")
		par, _, _ := unstructured.NestedInt64(cp.Object, "spec", "driver", "upgradePolicy", "maxParallelUpgrades")
		drain, _, _ := unstructured.NestedBool(cp.Object, "spec", "driver", "upgradePolicy", "drain", "enable")
		_, deletes, _ := unstructured.NestedMap(cp.Object, "spec", "driver", "upgradePolicy", "podDeletion")
		// Off while no rollout moves the driver: nothing upgrades a node
		// between rollouts, nor on the first apply, before the controller
		// holds the nodes. The operator deletes the GPU pods and drains
		// nothing more (evict = "gpu-pods", the default).
		if auto || par != 1 || drain || !deletes {
			w.T.Errorf("ClusterPolicy upgradePolicy: autoUpgrade %t maxParallelUpgrades %d drain.enable %t podDeletion %t, want false 1 false true", auto, par, drain, deletes)
		}
		if !w.Exists(opCluster, "nvidia.com/v1alpha1", "NVIDIADriver", "", render.OperatorNVIDIADriverName(lab.PoolName)) {
			w.T.Errorf("no NVIDIADriver %s", render.OperatorNVIDIADriverName(lab.PoolName))
		}
	})

	s.step("the stable rollout holds every GPU node with the operator's skip label", func(w *world) {
		w.WaitRollout(opCluster, lab.ReleaseStable, 2*time.Minute, v1alpha1.PhaseCompleted)
		// The operator's validation state waits for its validator pods,
		// which the ClusterPolicy deploys once the driver is ready.
		w.Eventually(3*time.Minute, "the ClusterPolicy ready", func() (bool, string) {
			return clusterPolicyReady(context.Background(), w.Client(opCluster))
		})
		// With its upgrade policy off at rest the operator's upgrade
		// controller labels no state: a node is settled Done by the
		// rollout (its driver already the release's) and held.
		w.Eventually(2*time.Minute, "every GPU node held and settled, in no operator upgrade", func() (bool, string) {
			nodes := w.gpuNodes(opCluster)
			var bad []string
			for name, n := range nodes {
				if n.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" || n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) ||
					v1alpha1.OperatorUpgrading(n.Labels[v1alpha1.LabelOperatorUpgradeState]) {
					bad = append(bad, fmt.Sprintf("%s (skip %q, phase %q, operator %q)", name, n.Labels[v1alpha1.LabelOperatorUpgradeSkip],
						n.Labels[v1alpha1.LabelPhase], n.Labels[v1alpha1.LabelOperatorUpgradeState]))
				}
			}
			slices.Sort(bad)
			return len(nodes) == opNodes && len(bad) == 0, fmt.Sprintf("%d nodes, not held or not settled: %v", len(nodes), bad)
		})
	})

	s.step("an admin cordons a node before the release", func(w *world) {
		n := w.gpuNodes(opCluster)[cordoned]
		base := n.DeepCopy()
		n.Spec.Unschedulable = true
		if err := w.Client(opCluster).Patch(context.Background(), n, client.MergeFrom(base)); err != nil {
			w.T.Fatal(err)
		}
	})

	s.step("start the release: render changes the pool's NVIDIADriver in place", func(w *world) {
		if _, code := w.Mutate("start", lab.ReleaseGood); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		w.WaitApplied(opCluster, w.Push())
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("nvidia.com/v1alpha1")
		d.SetKind("NVIDIADriver")
		if err := w.Client(opCluster).Get(context.Background(), client.ObjectKey{Name: render.OperatorNVIDIADriverName(lab.PoolName)}, d); err != nil {
			w.T.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(d.Object, "spec", "version"); v != lab.DriverGood {
			w.T.Errorf("NVIDIADriver %s version %q, want %s", d.GetName(), v, lab.DriverGood)
		}
		cp := &unstructured.Unstructured{}
		cp.SetAPIVersion("nvidia.com/v1")
		cp.SetKind("ClusterPolicy")
		if err := w.Client(opCluster).Get(context.Background(), client.ObjectKey{Name: "cluster-policy"}, cp); err != nil {
			w.T.Fatal(err)
		}
		if auto, _, _ := unstructured.NestedBool(cp.Object, "spec", "driver", "upgradePolicy", "autoUpgrade"); !auto {
			w.T.Error("ClusterPolicy upgradePolicy.autoUpgrade is false while the rollout moves the driver")
		}
		w.Eventually(time.Minute, "the operator marks every node upgrade-required", func() (bool, string) {
			var got []string
			for name, n := range w.gpuNodes(opCluster) {
				if n.Labels[v1alpha1.LabelOperatorUpgradeState] != v1alpha1.OperatorStateUpgradeRequired {
					got = append(got, name+"="+n.Labels[v1alpha1.LabelOperatorUpgradeState])
				}
			}
			return len(got) == 0, fmt.Sprint(got)
		})
	})

	s.check("nothing is released outside a window", func(w *world) {
		w.WaitRollout(opCluster, lab.ReleaseGood, time.Minute, v1alpha1.PhaseOutsideWindow)
		w.holdsFor(opCluster, 10*time.Second)
	})

	s.step("the window opens: the canary alone is released and soaks", func(w *world) {
		ws, we := windowAround(true)
		w.commitFleet(operatorFleetWithPromotion(w, ws, we), "open the maintenance window")
		w.WaitRollout(opCluster, lab.ReleaseGood, 2*time.Minute, v1alpha1.PhaseWaitingForApproval)
		if n := w.gpuNodes(opCluster)[canary]; n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) || n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverGood {
			w.T.Errorf("canary %s: phase %q driver %q, want Done on %s", canary, n.Labels[v1alpha1.LabelPhase], n.Labels[v1alpha1.LabelGFDDriverFull], lab.DriverGood)
		}
	})

	s.check("the canary is held until the approval", func(w *world) {
		w.holdsFor(opCluster, 10*time.Second, canary)
		if dr := w.Rollout(opCluster, lab.ReleaseGood); dr == nil || dr.Status.Phase != v1alpha1.PhaseWaitingForApproval {
			w.T.Errorf("not waiting for approval any more: %+v", dr)
		}
	})

	s.step("approve: the cordoned node goes first, then the next one soaks and raises an XID", func(w *world) {
		// The edit `gpufleet approve RELEASE/CLUSTER` makes.
		src := operatorFleetWithPromotion(w, "", "")
		approved := strings.Replace(src, "approved = []", `approved = ["`+lab.ReleaseGood+"/"+opCluster+`"]`, 1)
		if approved == src {
			w.T.Fatalf("no empty approved list in the fleet file:\n%s", src)
		}
		w.commitFleet(approved, "approve "+lab.ReleaseGood+"/"+opCluster)
		w.Eventually(3*time.Minute, xid+" soaking", func() (bool, string) {
			n := w.gpuNodes(opCluster)[xid]
			return n.Labels[v1alpha1.LabelPhase] == string(v1alpha1.NodeSoaking), "phase " + n.Labels[v1alpha1.LabelPhase]
		})
		if err := w.Sims[opCluster].RaiseXID(context.Background(), xid, 79); err != nil {
			w.T.Fatal(err)
		}
		w.WaitRollout(opCluster, lab.ReleaseGood, time.Minute, v1alpha1.PhaseStalled)
	})

	s.check("an XID after upgrade-done fails the node: quarantined by label and taint, not rolled back", func(w *world) {
		n := w.gpuNodes(opCluster)[xid]
		if n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeQuarantined) || n.Labels[v1alpha1.LabelQuarantined] != "true" {
			w.T.Errorf("%s: phase %q quarantine label %q", xid, n.Labels[v1alpha1.LabelPhase], n.Labels[v1alpha1.LabelQuarantined])
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintQuarantined }) {
			w.T.Errorf("%s: no quarantine taint: %v", xid, n.Spec.Taints)
		}
		if v := n.Labels[v1alpha1.LabelGFDDriverFull]; v != lab.DriverGood {
			w.T.Errorf("%s: driver %s, want it left on %s (no per-node rollback on this path)", xid, v, lab.DriverGood)
		}
		if n.Annotations[v1alpha1.AnnotationFailed] != "true" {
			w.T.Errorf("%s: not marked failed", xid)
		}
		// The driver DaemonSet tolerates the quarantine taint: otherwise its
		// desired count drops below its pods and the operator's upgrade
		// controller refuses to build its state for every node.
		var dss appsv1.DaemonSetList
		var pods corev1.PodList
		ctx := context.Background()
		if err := w.Client(opCluster).List(ctx, &dss, client.InNamespace("gpu-operator"), client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
			w.T.Fatal(err)
		}
		if err := w.Client(opCluster).List(ctx, &pods, client.InNamespace("gpu-operator"), client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
			w.T.Fatal(err)
		}
		for _, ds := range dss.Items {
			owned := 0
			for _, p := range pods.Items {
				if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID == ds.UID {
					owned++
				}
			}
			if int(ds.Status.DesiredNumberScheduled) != owned {
				w.T.Errorf("driver DaemonSet %s: %d desired, %d pods: the operator cannot build its upgrade state", ds.Name, ds.Status.DesiredNumberScheduled, owned)
			}
		}
	})

	s.check("the budget stops releases", func(w *world) {
		dr := w.Rollout(opCluster, lab.ReleaseGood)
		if dr == nil || dr.Status.BudgetUsed != 1 {
			w.T.Fatalf("rollout: %+v", dr)
		}
		w.holdsFor(opCluster, 10*time.Second, canary, cordoned, xid)
		n := w.gpuNodes(opCluster)[last]
		if n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverStable || n.Labels[v1alpha1.LabelOperatorUpgradeState] != v1alpha1.OperatorStateUpgradeRequired {
			w.T.Errorf("%s: driver %q state %q, want still %s at upgrade-required", last, n.Labels[v1alpha1.LabelGFDDriverFull], n.Labels[v1alpha1.LabelOperatorUpgradeState], lab.DriverStable)
		}
	})

	s.check("an admin's cordon survives the operator's upgrade", func(w *world) {
		n := w.gpuNodes(opCluster)[cordoned]
		if n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) || n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverGood {
			w.T.Errorf("%s: phase %q driver %q, want Done on %s", cordoned, n.Labels[v1alpha1.LabelPhase], n.Labels[v1alpha1.LabelGFDDriverFull], lab.DriverGood)
		}
		if !n.Spec.Unschedulable {
			w.T.Errorf("%s: uncordoned; an admin had cordoned it", cordoned)
		}
		if n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
			w.T.Errorf("%s: the admin's cordon is not recorded", cordoned)
		}
		if c := w.gpuNodes(opCluster)[canary]; c.Spec.Unschedulable {
			w.T.Errorf("%s: the canary is left cordoned (the operator uncordons what it cordoned)", canary)
		}
	})

	s.check("the operator's own state labels progress as documented", func(w *world) {
		order := map[string]int{"": -1}
		for i, st := range v1alpha1.OperatorStates {
			order[st] = i
		}
		byNode := map[string][]string{}
		for _, s := range w.Recorders[opCluster].Seen().Upgrade {
			node, st, _ := strings.Cut(s, "=")
			if seq := byNode[node]; len(seq) == 0 || seq[len(seq)-1] != st {
				byNode[node] = append(byNode[node], st)
			}
		}
		for _, node := range []string{canary, cordoned, xid} {
			seq := byNode[node]
			i := slices.Index(seq, v1alpha1.OperatorStateUpgradeRequired)
			if i < 0 {
				w.T.Errorf("%s: never upgrade-required: %v", node, seq)
				continue
			}
			upgrade := seq[i:]
			for k := 1; k < len(upgrade); k++ {
				if order[upgrade[k]] <= order[upgrade[k-1]] {
					w.T.Errorf("%s: %s after %s, out of the documented order: %v", node, upgrade[k], upgrade[k-1], seq)
				}
			}
			if upgrade[len(upgrade)-1] != v1alpha1.OperatorStateDone || len(upgrade) < 3 {
				w.T.Errorf("%s: states %v, want upgrade-required … upgrade-done", node, upgrade)
			}
			w.T.Logf("%s: %s", node, strings.Join(seq, " → "))
		}
		if seq := byNode[last]; slices.ContainsFunc(seq, v1alpha1.OperatorUpgrading) {
			w.T.Errorf("%s (never released): %v", last, seq)
		}
	})

	s.check("a node that joins gets its driver from the operator at once, held with the skip label all along", func(w *world) {
		node, began := w.addNode("joiner")
		w.Eventually(90*time.Second, node+" held, running the pool's driver and settled Done", func() (bool, string) {
			n := w.gpuNodes(opCluster)[node]
			if n == nil {
				return false, "node gone"
			}
			held := n.Labels[v1alpha1.LabelOperatorUpgradeSkip] == "true"
			return held && n.Labels[v1alpha1.LabelGFDDriverFull] == lab.DriverGood && n.Labels[v1alpha1.LabelPhase] == string(v1alpha1.NodeDone),
				fmt.Sprintf("skip %t, driver %q, phase %q", held, n.Labels[v1alpha1.LabelGFDDriverFull], n.Labels[v1alpha1.LabelPhase])
		})
		w.T.Logf("%s: the operator's driver %s up and the node settled after %s", node, lab.DriverGood, lab.Since(began))
		// The skip label held back no first install, and the node was never
		// in one of the operator's upgrades.
		for _, s := range w.Recorders[opCluster].Seen().Upgrade {
			if n, st, _ := strings.Cut(s, "="); n == node && v1alpha1.OperatorUpgrading(st) {
				w.T.Errorf("%s went through the operator's upgrade state %s", node, st)
			}
		}
	})
}

// operatorFleetWithPromotion is the fleet file as it stands (the promotion
// commands edited it) with the window replaced (kept when start is "").
func operatorFleetWithPromotion(w *world, start, end string) string {
	w.T.Helper()
	src, err := os.ReadFile(w.FleetFile)
	if err != nil {
		w.T.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		switch {
		case start == "":
		case strings.HasPrefix(l, "start = \""):
			lines[i] = `start = "` + start + `"`
		case strings.HasPrefix(l, "end = \""):
			lines[i] = `end = "` + end + `"`
		}
	}
	return strings.Join(lines, "\n")
}
