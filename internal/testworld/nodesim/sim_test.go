package nodesim

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// TestDriverInstallWithFakeClock walks driver installs step by step on a
// fake clock: the pods come and go as the driver DaemonSets would put and
// take them, the simulator plays the install inside them. The real
// cluster's version of this is nodesim_test.go; this one runs under
// -short.
func TestDriverInstallWithFakeClock(t *testing.T) {
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).Build()
	sim := New(c, Options{Clock: clk, InstallTime: 3 * time.Second, BadDrivers: []string{"590.1.1"}})
	nodes, err := sim.AddPool(ctx, Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 2, Driver: "570.172.08"})
	if err != nil {
		t.Fatal(err)
	}

	// schedule plays the driver DaemonSet of version on node: its pod of
	// any other version goes, a new one comes.
	schedule := func(node, version string) {
		t.Helper()
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace("gpu-operator")); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.Spec.NodeName == node {
				if err := c.Delete(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		name := "nvidia-driver-" + strings.ReplaceAll(version, ".", "-") + "-" + node
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpu-operator", Labels: map[string]string{
				v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver,
			}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: DriverContainer, Image: "nvcr.io/nvidia/driver:" + version + "-ubuntu22.04"}}},
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(node, version string) {
		t.Helper()
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels[v1alpha1.LabelDriver] = version
		if err := c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		schedule(node, version)
	}
	sync := func() {
		t.Helper()
		if err := sim.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step, node, wantFull, wantPod string) {
		t.Helper()
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace("gpu-operator")); err != nil {
			t.Fatal(err)
		}
		var pods []string
		for i := range list.Items {
			p := &list.Items[i]
			if p.Spec.NodeName != node {
				continue
			}
			state := "installing"
			switch {
			case p.Status.StartTime == nil:
				state = "new"
			case planner.PodReady(p):
				state = "ready"
			case crashLooping(p, DriverContainer):
				state = "crashing"
			}
			pods = append(pods, DriverPodVersion(p)+" "+state)
		}
		if got := n.Labels[v1alpha1.LabelGFDDriverFull]; got != wantFull || len(pods) != 1 || pods[0] != wantPod {
			t.Errorf("%s: %s reports %s with driver pods %q; want %s with [%s]", step, node, got, pods, wantFull, wantPod)
		}
	}

	for _, n := range nodes {
		schedule(n, "570.172.08")
	}
	sync()
	check("registered", nodes[0], "570.172.08", "570.172.08 ready")
	check("registered", nodes[1], "570.172.08", "570.172.08 ready")

	flip(nodes[0], "580.95.05")
	flip(nodes[1], "590.1.1")
	sync()
	check("flipped", nodes[0], "570.172.08", "580.95.05 installing")
	clk.Step(2 * time.Second)
	sync()
	check("2s later", nodes[0], "570.172.08", "580.95.05 installing")
	clk.Step(time.Second)
	sync()
	check("3s later", nodes[0], "580.95.05", "580.95.05 ready")
	check("3s later", nodes[1], "570.172.08", "590.1.1 crashing")
	clk.Step(time.Hour)
	sync()
	check("an hour later", nodes[1], "570.172.08", "590.1.1 crashing")

	// The failed install unloaded 570: going back to it installs it again.
	flip(nodes[1], "570.172.08")
	sync()
	check("rolled back", nodes[1], "570.172.08", "570.172.08 installing")
	clk.Step(3 * time.Second)
	sync()
	check("rolled back 3s later", nodes[1], "570.172.08", "570.172.08 ready")

	// A pod of the loaded version replaced (the operator restarted it)
	// finds its driver loaded.
	schedule(nodes[0], "580.95.05")
	sync()
	check("pod replaced", nodes[0], "580.95.05", "580.95.05 ready")
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cond := func(status corev1.ConditionStatus, at time.Time) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeConditionType(FaultXID), Status: status,
			LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}
	}
	n := &corev1.Node{}
	setCondition(n, cond(corev1.ConditionTrue, t0))
	setCondition(n, cond(corev1.ConditionTrue, t0.Add(time.Minute)))
	c := n.Status.Conditions[0]
	if !c.LastTransitionTime.Time.Equal(t0) || !c.LastHeartbeatTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("same status: transition %s heartbeat %s; want transition kept, heartbeat renewed", c.LastTransitionTime, c.LastHeartbeatTime)
	}
	setCondition(n, cond(corev1.ConditionFalse, t0.Add(2*time.Minute)))
	c = n.Status.Conditions[0]
	if c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || len(n.Status.Conditions) != 1 {
		t.Errorf("status change: %+v, want False with a new transition time", n.Status.Conditions)
	}
}
