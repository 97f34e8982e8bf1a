package nodesim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestSyncDriverFlipWithFakeClock walks a driver upgrade and a failed one
// step by step on a fake clock. The real API server version of this is
// nodesim_test.go; this one runs under -short.
func TestSyncDriverFlipWithFakeClock(t *testing.T) {
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).Build()
	sim := New(c, Options{Clock: clk, InstallTime: 3 * time.Second, BadDrivers: []string{"590.1.1"}})
	nodes, err := sim.AddPool(ctx, Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 2, Driver: "570.172.08"})
	if err != nil {
		t.Fatal(err)
	}

	driverState := func(node string) (full string, pods map[string]string) {
		t.Helper()
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace("gpu-operator")); err != nil {
			t.Fatal(err)
		}
		pods = map[string]string{}
		for _, p := range list.Items {
			if p.Spec.NodeName != node {
				continue
			}
			state := "installing"
			switch {
			case podReady(&p):
				state = "ready"
			case crashLooping(&p):
				state = "crashing"
			}
			pods[p.Labels[LabelDriverPodVersion]] = state
		}
		return n.Labels[v1alpha1.LabelGFDDriverFull], pods
	}
	check := func(step, node, wantFull string, wantPods map[string]string) {
		t.Helper()
		full, pods := driverState(node)
		if full != wantFull {
			t.Errorf("%s: %s driver label = %s, want %s", step, node, full, wantFull)
		}
		if len(pods) != len(wantPods) {
			t.Errorf("%s: %s driver pods = %v, want %v", step, node, pods, wantPods)
		}
		for v, s := range wantPods {
			if pods[v] != s {
				t.Errorf("%s: %s driver pods = %v, want %v", step, node, pods, wantPods)
			}
		}
	}

	check("created", nodes[0], "570.172.08", map[string]string{"570.172.08": "ready"})
	setNodeLabel(t, c, nodes[0], v1alpha1.LabelDriver, "580.95.05")
	setNodeLabel(t, c, nodes[1], v1alpha1.LabelDriver, "590.1.1")
	sync := func() {
		t.Helper()
		if err := sim.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	check("flipped", nodes[0], "570.172.08", map[string]string{"580.95.05": "installing"})
	clk.Step(2 * time.Second)
	sync()
	check("2s later", nodes[0], "570.172.08", map[string]string{"580.95.05": "installing"})
	clk.Step(time.Second)
	sync()
	check("3s later", nodes[0], "580.95.05", map[string]string{"580.95.05": "ready"})
	check("3s later", nodes[1], "570.172.08", map[string]string{"590.1.1": "crashing"})
	clk.Step(time.Hour)
	sync()
	check("an hour later", nodes[1], "570.172.08", map[string]string{"590.1.1": "crashing"})
}

func TestGraceOver(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	p := &corev1.Pod{}
	if graceOver(p, now) {
		t.Error("graceOver of a pod not being deleted = true")
	}
	for _, tt := range []struct {
		deadline time.Time
		want     bool
	}{{now.Add(time.Second), false}, {now, true}, {now.Add(-time.Second), true}} {
		d := metav1Time(tt.deadline)
		p.DeletionTimestamp = &d
		if got := graceOver(p, now); got != tt.want {
			t.Errorf("graceOver(deadline %s) = %t, want %t", tt.deadline, got, tt.want)
		}
	}
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := &corev1.Node{}
	setCondition(n, readyCondition(true, t0))
	setCondition(n, readyCondition(true, t0.Add(time.Minute)))
	c := findCondition(n, corev1.NodeReady)
	if !c.LastTransitionTime.Time.Equal(t0) || !c.LastHeartbeatTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("same status: transition %s heartbeat %s; want transition kept, heartbeat renewed", c.LastTransitionTime, c.LastHeartbeatTime)
	}
	setCondition(n, readyCondition(false, t0.Add(2*time.Minute)))
	c = findCondition(n, corev1.NodeReady)
	if c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || len(n.Status.Conditions) != 1 {
		t.Errorf("status change: %+v, want False with a new transition time", n.Status.Conditions)
	}
}

func setNodeLabel(t *testing.T, c client.Client, node, k, v string) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels[k] = v
	if err := c.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }
