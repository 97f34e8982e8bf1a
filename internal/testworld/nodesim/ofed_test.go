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
	"github.com/gpufleet/gpufleet/internal/planner"
)

const (
	ofedA   = "25.04-0.6.1.0-2"
	ofedB   = "doca3.2.0-25.10-1.2.8.0-2"
	ofedBad = "doca3.2.0-25.10-1.2.9.0-1"
)

func TestOFEDPodVersion(t *testing.T) {
	for image, want := range map[string]string{
		"nvcr.io/nvidia/mellanox/doca-driver:" + ofedA + "-ubuntu22.04-amd64": ofedA,
		"nvcr.io/nvidia/mellanox/doca-driver:" + ofedB + "-rhel9.4-arm64":     ofedB,
		"nvcr.io/nvidia/mellanox/doca-driver:latest":                          "",
		"nvcr.io/nvidia/mellanox/doca-driver":                                 "",
	} {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: v1alpha1.OFEDContainer, Image: image}}}}
		if got := OFEDPodVersion(p); got != want {
			t.Errorf("OFEDPodVersion(%s) = %q, want %q", image, got, want)
		}
	}
}

// TestPeermemWithFakeClock walks a GPUDirect RDMA node step by step on a
// fake clock: the GPU driver with peermem waits for OFED, comes up with
// it, crash-loops in peermem once OFED reloads under it (gpu-operator
// #2868), and is Ready again only when its pod is recreated. A bad OFED
// never loads.
func TestPeermemWithFakeClock(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).Build()
	sim := New(c, Options{Clock: clk, InstallTime: 3 * time.Second, OFEDInstallTime: 2 * time.Second, BadOFED: []string{ofedBad}})
	nodes, err := sim.AddPool(ctx, Pool{Name: "ib", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 1, Driver: "570.172.08", ManagedNICs: true})
	if err != nil {
		t.Fatal(err)
	}
	node := nodes[0]
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1alpha1.LabelNFDMellanoxPCI] != "true" {
		t.Fatalf("a node with managed NICs has labels %v, want %s=true", n.Labels, v1alpha1.LabelNFDMellanoxPCI)
	}

	create := func(p *corev1.Pod) {
		t.Helper()
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(name, ns string) {
		t.Helper()
		if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	ofedPod := func(name, version string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DefaultOFEDNamespace, Labels: map[string]string{v1alpha1.LabelOFEDDriverPod: ""}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Name: v1alpha1.OFEDContainer, Image: "nvcr.io/nvidia/mellanox/doca-driver:" + version + "-ubuntu22.04-amd64",
			}}},
		}
	}
	driverPod := func(name string) *corev1.Pod {
		image := "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04"
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpu-operator", Labels: map[string]string{
				v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver,
			}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
				{Name: DriverContainer, Image: image}, {Name: v1alpha1.PeermemContainer, Image: image},
			}},
		}
	}
	sync := func(d time.Duration) {
		t.Helper()
		clk.Step(d)
		if err := sim.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name, ns string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Name: name, Namespace: ns}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	peermem := func(p *corev1.Pod) corev1.ContainerStatus {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == v1alpha1.PeermemContainer {
				return cs
			}
		}
		return corev1.ContainerStatus{}
	}
	waiting := func(cs corev1.ContainerStatus) string {
		if cs.State.Waiting == nil {
			return ""
		}
		return cs.State.Waiting.Reason
	}

	// The driver pod comes before the node's OFED: its install waits.
	create(ofedPod("ofed-a", ofedA))
	create(driverPod("driver-1"))
	sync(0)
	sync(time.Second)
	if p := get("driver-1", "gpu-operator"); p.Status.StartTime != nil {
		t.Fatalf("the GPU driver began before the node's OFED was loaded: %+v", p.Status)
	}
	sync(time.Second) // OFED loaded
	if p := get("ofed-a", DefaultOFEDNamespace); !planner.PodReady(p) {
		t.Fatalf("OFED pod not Ready after its install time: %+v", p.Status)
	}
	sync(100 * time.Millisecond) // the driver install begins
	sync(3 * time.Second)        // and ends
	if p := get("driver-1", "gpu-operator"); !planner.PodReady(p) || !peermem(p).Ready {
		t.Fatalf("driver pod started after OFED: not Ready with peermem: %+v", p.Status)
	}
	recs, err := InstallRecords(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Reason != ReasonOFEDReady || recs[0].Version != ofedA ||
		recs[1].Reason != ReasonDriverInstall || recs[1].Version != "580.95.05" || !recs[0].At.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("install records %+v, want OFED %s loaded at +2s, then the GPU driver install", recs, ofedA)
	}

	// OFED reloads under the running GPU driver.
	remove("ofed-a", DefaultOFEDNamespace)
	create(ofedPod("ofed-b", ofedB))
	sync(0)
	sync(0)
	if p := get("driver-1", "gpu-operator"); planner.PodReady(p) || waiting(peermem(p)) != reasonWaitingOFED {
		t.Fatalf("peermem while OFED reloads: %+v, want waiting for OFED", peermem(p))
	}
	sync(2 * time.Second) // OFED B loaded
	sync(0)
	p := get("driver-1", "gpu-operator")
	if planner.PodReady(p) || waiting(peermem(p)) != "CrashLoopBackOff" || !containerReady(p, DriverContainer) {
		t.Fatalf("driver pod after an OFED reload: %+v, want peermem crash-looping beside a Ready driver", p.Status)
	}
	restarts := peermem(p).RestartCount
	sync(3 * time.Second)
	sync(3 * time.Second)
	if p := get("driver-1", "gpu-operator"); peermem(p).RestartCount <= restarts || planner.PodReady(p) {
		t.Fatalf("peermem restarts %d, then %d: want more, and the pod still not Ready", restarts, peermem(p).RestartCount)
	}

	// Only a new driver pod loads peermem against the new OFED.
	remove("driver-1", "gpu-operator")
	create(driverPod("driver-2"))
	sync(time.Second)
	if p := get("driver-2", "gpu-operator"); !planner.PodReady(p) || !peermem(p).Ready {
		t.Fatalf("recreated driver pod: %+v, want Ready with peermem", p.Status)
	}

	// A bad OFED never loads; peermem waits for it.
	remove("ofed-b", DefaultOFEDNamespace)
	create(ofedPod("ofed-bad", ofedBad))
	sync(0)
	for range 4 {
		sync(2 * time.Second)
	}
	if p := get("ofed-bad", DefaultOFEDNamespace); planner.PodReady(p) || !crashLooping(p, v1alpha1.OFEDContainer) {
		t.Fatalf("bad OFED pod: %+v, want crash-looping", p.Status)
	}
	if p := get("driver-2", "gpu-operator"); planner.PodReady(p) || waiting(peermem(p)) != reasonWaitingOFED {
		t.Fatalf("peermem with a bad OFED: %+v, want waiting for OFED", peermem(p))
	}
}
