package nodesim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

const (
	oldDriver = "570.172.08"
	newDriver = "580.95.05"
	badDriver = "590.1.1"
)

// TestNodeSim drives the simulator on a real cluster: kwok the kubelet,
// kube-controller-manager and kube-scheduler running the driver
// DaemonSets the GPU Operator would (package nodesimtest). The subtests
// share one cluster and one simulator; each uses its own pool.
func TestNodeSim(t *testing.T) {
	tb := testbed.New(t, testbed.Options{Kube: true, Kwok: true})
	c := tb.Clusters()[0].Client
	sim := nodesim.New(c, nodesim.Options{
		InstallTime: time.Second,
		BadDrivers:  []string{badDriver},
		Logf:        t.Logf,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if err := nodesimtest.DriverDaemonSets(t.Context(), c, "gpu-operator", newDriver, badDriver); err != nil {
		t.Fatal(err)
	}

	addPool := func(t *testing.T, name string) string {
		t.Helper()
		nodes, err := nodesimtest.AddPool(t.Context(), c, sim, "gpu-operator", nodesim.Pool{
			Name: name, Product: "NVIDIA-H100-80GB-HBM3", Nodes: 1, Driver: oldDriver,
		})
		if err != nil {
			t.Fatal(err)
		}
		return nodes[0]
	}

	t.Run("label flip installs the new driver", func(t *testing.T) {
		node := addPool(t, "flip")
		waitFor(t, "initial driver pod Ready", func(ctx context.Context) (bool, error) {
			p, err := driverPod(ctx, c, node, oldDriver)
			return p != nil && planner.PodReady(p), err
		})
		start := time.Now()
		setLabel(t, c, node, v1alpha1.LabelDriver, newDriver)
		waitFor(t, "new driver reported", func(ctx context.Context) (bool, error) {
			n := getNode(t, c, node)
			return n.Labels[v1alpha1.LabelGFDDriverFull] == newDriver, nil
		})
		if took := time.Since(start); took < time.Second {
			t.Errorf("new driver reported after %s, before the 1s install time", took)
		}
		n := getNode(t, c, node)
		for k, want := range map[string]string{
			v1alpha1.LabelGFDDriverMajor: "580", v1alpha1.LabelGFDDriverMinor: "95", v1alpha1.LabelGFDDriverRevision: "05",
		} {
			if n.Labels[k] != want {
				t.Errorf("label %s = %q, want %q", k, n.Labels[k], want)
			}
		}
		p, err := driverPod(t.Context(), c, node, newDriver)
		if err != nil || p == nil || !planner.PodReady(p) {
			t.Errorf("new driver pod = %v, %v; want it Ready", p, err)
		}
		if old, _ := driverPod(t.Context(), c, node, oldDriver); old != nil {
			t.Errorf("old driver pod %s still there", old.Name)
		}
	})

	t.Run("bad driver never becomes Ready", func(t *testing.T) {
		node := addPool(t, "bad")
		setLabel(t, c, node, v1alpha1.LabelDriver, badDriver)
		waitFor(t, "bad driver pod crash looping", func(ctx context.Context) (bool, error) {
			p, err := driverPod(ctx, c, node, badDriver)
			if p == nil || err != nil {
				return false, err
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
					return true, nil
				}
			}
			return false, nil
		})
		time.Sleep(2 * time.Second) // two more install times: still failed
		p, err := driverPod(t.Context(), c, node, badDriver)
		if err != nil || p == nil || planner.PodReady(p) {
			t.Errorf("bad driver pod = %v, %v; want it present and not Ready", p, err)
		}
		if got := getNode(t, c, node).Labels[v1alpha1.LabelGFDDriverFull]; got != oldDriver {
			t.Errorf("%s = %q after a failed install, want the old %q", v1alpha1.LabelGFDDriverFull, got, oldDriver)
		}
	})

	t.Run("NotReady, XID and ECC on command", func(t *testing.T) {
		node := addPool(t, "fault")
		ctx := t.Context()
		readyIs := func(want corev1.ConditionStatus) {
			t.Helper()
			waitFor(t, fmt.Sprintf("Ready=%s", want), func(ctx context.Context) (bool, error) {
				return condition(getNode(t, c, node), corev1.NodeReady).Status == want, nil
			})
		}
		readyIs(corev1.ConditionTrue)

		// The kubelet stops: the node lifecycle controller notices the
		// stale Lease and says so (Unknown: nobody reports it False).
		if err := sim.SetNotReady(ctx, node); err != nil {
			t.Fatal(err)
		}
		readyIs(corev1.ConditionUnknown)
		if err := sim.SetReady(ctx, node); err != nil {
			t.Fatal(err)
		}
		readyIs(corev1.ConditionTrue)

		if err := sim.RaiseXID(ctx, node, 79); err != nil {
			t.Fatal(err)
		}
		if err := sim.RaiseECC(ctx, node); err != nil {
			t.Fatal(err)
		}
		n := getNode(t, c, node)
		for fault, reason := range map[nodesim.Fault]string{nodesim.FaultXID: nodesim.ReasonXID, nodesim.FaultECC: nodesim.ReasonECC} {
			cond := condition(n, corev1.NodeConditionType(fault))
			if cond.Status != corev1.ConditionTrue || cond.Reason != reason {
				t.Errorf("condition %s = %s/%s, want True/%s", fault, cond.Status, cond.Reason, reason)
			}
		}
		if got := condition(n, corev1.NodeReady).Status; got != corev1.ConditionTrue {
			t.Errorf("Ready = %s after raising faults, want True (faults must not clobber it)", got)
		}
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Type == corev1.EventTypeWarning {
				seen[e.Reason] = e.Message
			}
		}
		if seen[nodesim.ReasonXID] == "" || seen[nodesim.ReasonECC] == "" {
			t.Errorf("Warning events on node %s = %v, want XidError and EccError", node, seen)
		}

		if err := sim.ClearFault(ctx, node, nodesim.FaultXID); err != nil {
			t.Fatal(err)
		}
		if got := condition(getNode(t, c, node), corev1.NodeConditionType(nodesim.FaultXID)).Status; got != corev1.ConditionFalse {
			t.Errorf("GpuXidError = %s after ClearFault, want False", got)
		}
	})
}

func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			t.Logf("waiting for %s: %v", what, err)
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func getNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func setLabel(t *testing.T, c client.Client, node, key, value string) {
	t.Helper()
	n := getNode(t, c, node)
	patch := client.MergeFrom(n.DeepCopy())
	n.Labels[key] = value
	if err := c.Patch(t.Context(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// driverPod returns the driver pod of version on node, nil if none.
func driverPod(ctx context.Context, c client.Client, node, version string) (*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace("gpu-operator"), client.MatchingLabels{
		v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver,
	}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil && nodesim.DriverPodVersion(p) == version {
			return p, nil
		}
	}
	return nil, nil
}

func condition(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}
