package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
)

// TestJoiningNodeLabelledAtOnce: on a real API server, under the admission
// policy, with the controller under its own rules, a GPU node registered
// the way a provisioner registers it (its product, Ready, no gpufleet
// label, no driver) gets its driver label in the controller's first pass,
// though the rollout's maintenance window is shut: the rollout's target,
// as it has no canary to wait for. Its driver comes up, it settles Done and
// the rollout completes counting it. A node an admin cordoned is labelled
// and stays cordoned, its cordon recorded; a quarantined one is never
// labelled. Each join is an Event and a count.
func TestJoiningNodeLabelledAtOnce(t *testing.T) {
	c := env(t)
	ctx := context.Background()
	// A product no other test's nodes have: the rollout selects the way
	// render's does, every GPU node of the product, pool label or not.
	const product = "NVIDIA-L40S"
	startController(t, RealClock{}, nil)
	ro := newRollout("joins", "", oldDriver, newDriver)
	ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{
		"nvidia.com/gpu.product": product, "nvidia.com/gpu.present": "true",
	}}
	shut := time.Now().UTC().Add(12 * time.Hour)
	ro.Spec.Windows = []v1alpha1.MaintenanceWindow{{Start: shut.Format("15:04"), End: shut.Add(time.Hour).Format("15:04"), TimeZone: "UTC"}}
	create(t, ro)

	began := time.Now()
	names, err := nodesimtest.AddPool(ctx, c, suite.sim, driverNamespace, nodesim.Pool{Name: "joins", Product: product, Nodes: 1, Provisioned: true})
	if err != nil {
		t.Fatal(err)
	}
	fresh := names[0]
	var labelled time.Duration
	waitFor(t, 15*time.Second, fresh+" labelled", func() (bool, string) {
		n := getNode(t, fresh)
		labelled = time.Since(began)
		return n.Labels[v1alpha1.LabelDriver] != "", fmt.Sprint(n.Labels)
	})
	t.Logf("%s labelled %s after %s, its window shut", fresh, getNode(t, fresh).Labels[v1alpha1.LabelDriver], labelled.Round(time.Millisecond))
	if got := getNode(t, fresh).Labels[v1alpha1.LabelDriver]; got != newDriver {
		t.Fatalf("%s labelled %s, want the target %s (the rollout has no canary)", fresh, got, newDriver)
	}
	waitNodePhase(t, fresh, v1alpha1.NodeDone, 30*time.Second)
	if n := getNode(t, fresh); n.Labels[v1alpha1.LabelGFDDriverFull] != newDriver || n.Spec.Unschedulable {
		t.Errorf("%s: reports %q, unschedulable %t; want %s and never cordoned", fresh, n.Labels[v1alpha1.LabelGFDDriverFull], n.Spec.Unschedulable, newDriver)
	}
	dr := waitPhase(t, "joins", v1alpha1.PhaseCompleted, 10*time.Second)
	if dr.Status.Total != 1 || dr.Status.Nodes.Done != 1 {
		t.Errorf("rollout %d of %d done, want 1 of 1", dr.Status.Nodes.Done, dr.Status.Total)
	}

	// Registered cordoned (an admin's, or a provisioner's until the node
	// is ready), and one carrying the quarantine label.
	register := func(name string, cordoned bool, labels map[string]string) {
		t.Helper()
		l := map[string]string{"nvidia.com/gpu.product": product, "nvidia.com/gpu.present": "true"}
		maps.Copy(l, labels)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
		// The controller may label it before its kubelet reports Ready.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
				return err
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			return c.Status().Update(ctx, n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	register("joins-cordoned", true, nil)
	// Quarantined by a rollout earlier: only the controller writes the
	// label (config/admission), so its service account puts it on, before
	// the node carries the product the rollout selects.
	register("joins-quarantined", false, map[string]string{"nvidia.com/gpu.product": "not-yet"})
	label := func(c client.Client, key, value string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
		if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joins-quarantined"}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	label(controllerClient(t), v1alpha1.LabelQuarantined, "true")
	label(c, "nvidia.com/gpu.product", product)
	waitFor(t, 15*time.Second, "joins-cordoned labelled", func() (bool, string) {
		n := getNode(t, "joins-cordoned")
		return n.Labels[v1alpha1.LabelDriver] == newDriver, fmt.Sprint(n.Labels)
	})
	n := getNode(t, "joins-cordoned")
	if !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
		t.Errorf("joins-cordoned: unschedulable %t, admin-cordoned mark %q; want the cordon kept and recorded", n.Spec.Unschedulable, n.Annotations[v1alpha1.AnnotationAdminCordoned])
	}
	// The quarantined node is selected and seen by every pass since.
	morePasses(t, "joins", 2)
	if q := getNode(t, "joins-quarantined"); q.Labels[v1alpha1.LabelDriver] != "" || q.Labels[v1alpha1.LabelRollout] != "" {
		t.Errorf("the quarantined node was taken: %v", q.Labels)
	}

	waitEvent(t, "joins", "NodeJoined", fresh, "labelled "+newDriver)
	waitEvent(t, "joins", "NodeJoined", "joins-cordoned")
	if got := metricValue(t, metrics.Registry, `gpufleet_rollout_nodes_joined_total{driver="`+newDriver+`",rollout="joins"}`); got != 2 {
		t.Errorf("gpufleet_rollout_nodes_joined_total = %v, want 2", got)
	}
}

// TestJoiningNodeGetsItsPool: where two pools share a GPU product (the
// rollout's spec.pools, as render writes them), a node that registers with
// its product and its MIG layout but no gpufleet label gets the one pool
// whose selector matches it, in the same write as its driver label; a
// node both pools would match gets no pool label.
func TestJoiningNodeGetsItsPool(t *testing.T) {
	c := env(t)
	ctx := context.Background()
	const product, mig = "NVIDIA-A30", "nvidia.com/mig.config"
	startController(t, RealClock{}, nil)
	ro := newRollout("pools", "", oldDriver, newDriver)
	ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": product}}
	ro.Spec.Pools = []v1alpha1.PoolSpec{
		{Name: "a30-mig", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": product, mig: "all-1g.6gb"}}},
		{Name: "a30", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": product},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: mig, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"all-1g.6gb"}}}}},
		{Name: "a30-any-mig", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{mig: "all-2g.12gb"}}},
	}
	create(t, ro)
	register := func(name string, labels map[string]string) {
		t.Helper()
		l := map[string]string{"nvidia.com/gpu.product": product}
		maps.Copy(l, labels)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	}
	register("pools-mig", map[string]string{mig: "all-1g.6gb"})
	register("pools-plain", nil)
	// a30 (not all-1g.6gb) and a30-any-mig both select it.
	register("pools-both", map[string]string{mig: "all-2g.12gb"})
	for node, want := range map[string]string{"pools-mig": "a30-mig", "pools-plain": "a30", "pools-both": ""} {
		waitFor(t, 15*time.Second, node+" labelled", func() (bool, string) {
			n := getNode(t, node)
			return n.Labels[v1alpha1.LabelDriver] == newDriver, fmt.Sprint(n.Labels)
		})
		if got := getNode(t, node).Labels[v1alpha1.LabelPool]; got != want {
			t.Errorf("%s: pool %q, want %q", node, got, want)
		}
	}
}
