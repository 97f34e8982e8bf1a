package testbed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/netopplay"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// The OFED versions of the test: A and B as the Network Operator's
// releases name them, and a B' that nodesim never loads.
const (
	ofedA   = "25.04-0.6.1.0-2"
	ofedB   = "doca3.2.0-25.10-1.2.8.0-2"
	ofedBad = "doca3.2.0-25.10-1.2.9.0-1"
)

// TestNetworkOperatorOFEDUpgrade runs the Network Operator as the testbed
// plays it — the real k8s-operator-libs upgrade state machine as the
// operator configures it, and the played NicClusterPolicy → OFED DaemonSet
// step — on a real control plane, kwok and nodesim, through what gpufleet
// asks of it: hold every node with the skip label, move one node at a
// time inside a cordon, and never let a bad OFED through.
func TestNetworkOperatorOFEDUpgrade(t *testing.T) {
	crd := sharedtest.NicClusterPolicyCRD(t, "v25.10.0")
	tb := New(t, Options{Kube: true, Kwok: true})
	c := tb.Clusters()[0]
	ctx := t.Context()
	ns := fleet.DefaultNetworkOperatorNamespace

	sim := nodesim.New(c.Client, nodesim.Options{InstallTime: time.Second, OFEDInstallTime: time.Second,
		BadOFED: []string{ofedBad}, OFEDNamespace: ns, Logf: t.Logf})
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Run(simCtx) }()
	t.Cleanup(func() {
		stopSim()
		if err := <-simDone; err != nil {
			t.Error(err)
		}
	})
	nodes, err := sim.AddPool(ctx, nodesim.Pool{Name: "ib", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 3, Driver: "570.172.08", ManagedNICs: true})
	if err != nil {
		t.Fatal(err)
	}
	// A pool without NICs: no OFED pod may land there.
	plain, err := sim.AddPool(ctx, nodesim.Pool{Name: "plain", Product: "NVIDIA-L40S", Nodes: 1, Driver: "570.172.08"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartNetworkOperator(ctx, NetworkOperatorOptions{CRDPaths: []string{crd}}); err != nil {
		t.Fatal(err)
	}

	// Version A everywhere, the upgrade on with the operator's own drain
	// off, as gpufleet renders it.
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mellanox.com/v1alpha1",
		"kind":       "NicClusterPolicy",
		"metadata":   map[string]any{"name": netopplay.PolicyName},
		"spec": map[string]any{
			"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": v1alpha1.LabelGFDProduct, "operator": "In", "values": []any{"NVIDIA-H100-80GB-HBM3"}},
				}}},
			}},
			"ofedDriver": map[string]any{
				"image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox", "version": ofedA,
				"upgradePolicy": map[string]any{
					"autoUpgrade": true, "maxParallelUpgrades": int64(0), "drain": map[string]any{"enable": false},
				},
			},
		},
	}}
	if err := c.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	pods := waitOFED(ctx, t, c, nodes, "OFED A Ready everywhere, mofed.wait=false, upgrade-done", func(n *corev1.Node, p *corev1.Pod) bool {
		return ofedIs(p, ofedA, true) && n.Labels[v1alpha1.LabelMOFEDWait] == "false" &&
			n.Labels[v1alpha1.LabelOFEDUpgradeState] == v1alpha1.OperatorStateDone
	})
	dss := &appsv1.DaemonSetList{}
	if err := c.Client.List(ctx, dss, client.InNamespace(ns), client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
		t.Fatal(err)
	}
	if len(dss.Items) != 1 || dss.Items[0].Name != netopplay.DaemonSetName("ubuntu", "22.04", "5.15.0-139-generic") ||
		dss.Items[0].Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Fatalf("OFED DaemonSets %v, want one mofed-ubuntu22.04-<kernel hash>-ds updating OnDelete", dsNames(dss))
	}
	if n := getNode(ctx, t, c, plain[0]); n.Labels[v1alpha1.LabelMOFEDWait] != "" {
		t.Errorf("node %s without NICs got %s=%s", plain[0], v1alpha1.LabelMOFEDWait, n.Labels[v1alpha1.LabelMOFEDWait])
	}

	// gpufleet holds every node, then the policy moves to B.
	for _, n := range nodes {
		patchNode(ctx, t, c, n, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, v1alpha1.LabelOFEDUpgradeSkip))
	}
	setOFEDVersion(ctx, t, c, ofedB)
	waitOFED(ctx, t, c, nodes, "every held node upgrade-required", func(n *corev1.Node, p *corev1.Pod) bool {
		return n.Labels[v1alpha1.LabelOFEDUpgradeState] == v1alpha1.OperatorStateUpgradeRequired
	})
	// Several of the controller's passes (it looks again every 2 s): no
	// held node moves, no OFED pod restarts.
	time.Sleep(5 * time.Second)
	checkHeld(ctx, t, c, nodes, pods, ofedA)
	for _, name := range nodes {
		if getNode(ctx, t, c, name).Spec.Unschedulable {
			t.Errorf("held node %s was cordoned", name)
		}
	}

	// Node 0's maintenance: cordoned by gpufleet, which records, as the
	// operator would had the node been cordoned when it was found
	// upgrade-required, that the node was cordoned before; then released.
	// Node 1: cordoned and released without that record.
	patchNode(ctx, t, c, nodes[0], fmt.Sprintf(`{"spec":{"unschedulable":true},"metadata":{"annotations":{%q:"true"}}}`,
		v1alpha1.AnnotationOFEDInitialUnschedulable))
	patchNode(ctx, t, c, nodes[1], `{"spec":{"unschedulable":true}}`)
	for _, n := range nodes[:2] {
		patchNode(ctx, t, c, n, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1alpha1.LabelOFEDUpgradeSkip))
	}
	upgraded := waitOFED(ctx, t, c, nodes[:2], "released nodes upgrade-done with OFED B Ready", func(n *corev1.Node, p *corev1.Pod) bool {
		return ofedIs(p, ofedB, true) && n.Labels[v1alpha1.LabelMOFEDWait] == "false" &&
			n.Labels[v1alpha1.LabelOFEDUpgradeState] == v1alpha1.OperatorStateDone
	})
	for _, n := range nodes[:2] {
		if upgraded[n].UID == pods[n].UID {
			t.Errorf("node %s: OFED pod %s was not recreated", n, upgraded[n].Name)
		}
	}
	n0 := getNode(ctx, t, c, nodes[0])
	if !n0.Spec.Unschedulable || n0.Annotations[v1alpha1.AnnotationOFEDInitialUnschedulable] != "" {
		t.Errorf("node %s: unschedulable=%t, initial-state annotation %q; want left cordoned and the annotation gone",
			nodes[0], n0.Spec.Unschedulable, n0.Annotations[v1alpha1.AnnotationOFEDInitialUnschedulable])
	}
	// The library records the initial state only when it finds the node
	// upgrade-required: a node cordoned after that is uncordoned at the
	// end (uncordon-required), under gpufleet's feet.
	if n1 := getNode(ctx, t, c, nodes[1]); n1.Spec.Unschedulable {
		t.Errorf("node %s cordoned after it was found upgrade-required is still cordoned: k8s-operator-libs no longer uncordons it", nodes[1])
	}
	checkHeld(ctx, t, c, nodes[2:], pods, ofedA)
	recs, err := nodesim.InstallRecords(ctx, c.Client)
	if err != nil {
		t.Fatal(err)
	}
	var loaded []string
	for _, r := range recs {
		if r.Reason == nodesim.ReasonOFEDReady {
			loaded = append(loaded, r.Node+" "+r.Version)
		}
	}
	slices.Sort(loaded)
	if want := []string{nodes[0] + " " + ofedA, nodes[0] + " " + ofedB, nodes[1] + " " + ofedA, nodes[1] + " " + ofedB, nodes[2] + " " + ofedA}; !slices.Equal(loaded, want) {
		t.Errorf("recorded OFED loads %q, want %q", loaded, want)
	}

	// B' is bad. gpufleet holds the nodes done with their maintenance
	// again (unheld, the next policy change would take them at once: with
	// maxParallelUpgrades 0 the library cordons and restarts them all);
	// the last node, released, never gets there.
	for _, n := range nodes[:2] {
		patchNode(ctx, t, c, n, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, v1alpha1.LabelOFEDUpgradeSkip))
	}
	setOFEDVersion(ctx, t, c, ofedBad)
	patchNode(ctx, t, c, nodes[2], fmt.Sprintf(`{"spec":{"unschedulable":true},"metadata":{"annotations":{%q:"true"}}}`,
		v1alpha1.AnnotationOFEDInitialUnschedulable))
	patchNode(ctx, t, c, nodes[2], fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1alpha1.LabelOFEDUpgradeSkip))
	bad := waitOFED(ctx, t, c, nodes[2:], "the node with the bad OFED upgrade-failed", func(n *corev1.Node, p *corev1.Pod) bool {
		return n.Labels[v1alpha1.LabelOFEDUpgradeState] == v1alpha1.OperatorStateFailed
	})
	n2 := getNode(ctx, t, c, nodes[2])
	if p := bad[nodes[2]]; ofedIs(p, ofedBad, true) || nodesim.OFEDPodVersion(p) != ofedBad || n2.Labels[v1alpha1.LabelMOFEDWait] != "true" || !n2.Spec.Unschedulable {
		t.Errorf("node %s: OFED pod %s (%s), mofed.wait=%q, unschedulable=%t; want the bad version not Ready, wait=true, cordoned",
			nodes[2], p.Name, nodesim.OFEDPodVersion(p), n2.Labels[v1alpha1.LabelMOFEDWait], n2.Spec.Unschedulable)
	}
	checkHeld(ctx, t, c, nodes[:2], upgraded, ofedB)
}

// waitOFED waits until ok holds for each of nodes and its OFED pod (the
// one not being deleted; nil when none), and returns those pods.
func waitOFED(ctx context.Context, t *testing.T, c *Cluster, nodes []string, what string, ok func(*corev1.Node, *corev1.Pod) bool) map[string]*corev1.Pod {
	t.Helper()
	var got map[string]*corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
			return false, nil
		}
		got = map[string]*corev1.Pod{}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil {
				got[p.Spec.NodeName] = p
			}
		}
		var states []string
		done := true
		for _, name := range nodes {
			n := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return false, nil
			}
			p := got[name]
			states = append(states, fmt.Sprintf("%s: state=%q wait=%q pod=%s", name, n.Labels[v1alpha1.LabelOFEDUpgradeState],
				n.Labels[v1alpha1.LabelMOFEDWait], podSummary(p)))
			done = done && ok(n, p)
		}
		last = strings.Join(states, "; ")
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen %s", what, err, last)
	}
	t.Logf("%s: %s", what, last)
	return got
}

// ofedIs reports whether p is an OFED pod of version, Ready as ready says.
func ofedIs(p *corev1.Pod, version string, ready bool) bool {
	return p != nil && nodesim.OFEDPodVersion(p) == version && podReady(p) == ready
}

func podSummary(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s(%s ready=%t)", p.Name, nodesim.OFEDPodVersion(p), podReady(p))
}

// checkHeld fails unless each of nodes is still upgrade-required and runs
// the same OFED pod as in before, of version.
func checkHeld(ctx context.Context, t *testing.T, c *Cluster, nodes []string, before map[string]*corev1.Pod, version string) {
	t.Helper()
	now := waitOFED(ctx, t, c, nodes, "held nodes", func(*corev1.Node, *corev1.Pod) bool { return true })
	for _, name := range nodes {
		n := getNode(ctx, t, c, name)
		p := now[name]
		if state := n.Labels[v1alpha1.LabelOFEDUpgradeState]; state != v1alpha1.OperatorStateUpgradeRequired {
			t.Errorf("held node %s: state %q, want upgrade-required", name, state)
		}
		if p == nil || p.UID != before[name].UID || !ofedIs(p, version, true) {
			t.Errorf("held node %s: OFED pod %s, want %s still running %s", name, podSummary(p), before[name].Name, version)
		}
	}
}

func setOFEDVersion(ctx context.Context, t *testing.T, c *Cluster, version string) {
	t.Helper()
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(netopplay.PolicyGVK)
	policy.SetName(netopplay.PolicyName)
	patch := fmt.Appendf(nil, `{"spec":{"ofedDriver":{"version":%q}}}`, version)
	if err := c.Client.Patch(ctx, policy, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

func patchNode(ctx context.Context, t *testing.T, c *Cluster, name, patch string) {
	t.Helper()
	n := &corev1.Node{}
	n.Name = name
	if err := c.Client.Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func getNode(ctx context.Context, t *testing.T, c *Cluster, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func dsNames(l *appsv1.DaemonSetList) []string {
	var names []string
	for _, ds := range l.Items {
		names = append(names, ds.Name)
	}
	return names
}
