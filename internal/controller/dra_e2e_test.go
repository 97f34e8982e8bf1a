package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
)

// The DRA tests: NVIDIA's DRA driver on simulated nodes. Its kubelet
// plugin's DaemonSet (package nodesimtest) runs a pod on each DRA node,
// kwok runs it, and the node simulator plays what runs in it (publishing
// the node's ResourceSlices with the real publisher, preparing and
// unpreparing claims); the real scheduler allocates the claims and the
// real kube-controller-manager makes template claims and releases them.

// draPool creates a pool of n simulated DRA nodes on driver, and waits
// until each publishes its GPUs' ResourceSlices on that driver.
func draPool(t *testing.T, name string, n int, driver string) []string {
	t.Helper()
	ctx := context.Background()
	nodes, err := nodesimtest.AddPool(ctx, suite.c, suite.sim, driverNamespace, nodesim.Pool{Name: name, Product: "NVIDIA-H100-80GB-HBM3", Nodes: n, Driver: driver, DRA: true, GPUCount: 2})
	if err != nil {
		t.Fatalf("add pool: %v", err)
	}
	if err := nodesimtest.WaitReady(ctx, suite.c, driverNamespace, driver, nodes, nil); err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes {
		waitFor(t, 30*time.Second, "node "+node+" publishing driver "+driver, func() (bool, string) {
			got := sliceVersions(t, node)
			return slices.Equal(got, []string{planner.SemverForm(driver)}), fmt.Sprint(got)
		})
	}
	return nodes
}

// sliceVersions are the driver versions node's gpu.nvidia.com slices
// publish, each once.
func sliceVersions(t testing.TB, node string) []string {
	t.Helper()
	out, err := nodesimtest.SliceVersions(context.Background(), suite.c, node)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// onNode pins a pod to node through the scheduler (which must allocate
// its claims): node affinity on the node's name.
func onNode(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
	}}}
}

// claimPod creates a pod on node holding claim (a ResourceClaim's name, or
// a template's with template set), and waits until it runs with the claim
// allocated.
func claimPod(t *testing.T, ns, name, node, claim string, template bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	rc := corev1.PodResourceClaim{Name: "dev", ResourceClaimName: new(claim)}
	if template {
		rc = corev1.PodResourceClaim{Name: "dev", ResourceClaimTemplateName: new(claim)}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Affinity: onNode(node), TerminationGracePeriodSeconds: new(int64(0)),
			ResourceClaims: []corev1.PodResourceClaim{rc},
			Containers: []corev1.Container{{Name: "app", Image: "app:1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}}}}},
	}
	if err := suite.c.Create(ctx, p); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	waitFor(t, 30*time.Second, "pod "+name+" running on "+node, func() (bool, string) {
		got := &corev1.Pod{}
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return false, err.Error()
		}
		return got.Spec.NodeName == node && got.Status.Phase == corev1.PodRunning, fmt.Sprintf("node %q phase %s conditions %v", got.Spec.NodeName, got.Status.Phase, got.Status.Conditions)
	})
	return p
}

// gpuClaim is a claim of one device of class.
func gpuClaim(ns, name, class string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class},
		}}}},
	}
}

func createObj(t *testing.T, o client.Object) {
	t.Helper()
	if err := suite.c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

// nicDriver publishes, with plain client writes, one NIC of a DRA driver
// that is not NVIDIA's GPU driver on node, with its device class.
func nicDriver(t *testing.T, node string) {
	t.Helper()
	createObj(t, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dra.net"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'dra.net'"}}}}})
	createObj(t, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-dra.net"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "dra.net", NodeName: new(node),
			Pool:    resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "nic-0"}}}})
}

// recordDRA records node's DRA state every 50ms until the test ends.
func recordDRA(t *testing.T, node string) *nodesimtest.DRARecorder {
	r := nodesimtest.RecordDRA(suite.c, 50*time.Millisecond, node)
	t.Cleanup(r.Stop)
	return r
}

// TestDRASwapOrder: on a DRA node the pod holding a GPU claim (made from a
// template) is evicted and its claim released before the plugin stops, the
// plugin is gone before the driver label moves, and it is back, Ready,
// with the node's slices republished on the new driver, before the node is
// Done. A CPU pod and a pod holding only a NIC claim stay.
func TestDRASwapOrder(t *testing.T) {
	env(t)
	ctx := context.Background()
	const ns = "dra-order"
	nodes := draPool(t, ns, 1, oldDriver)
	node := nodes[0]
	ensureNamespace(t, ns)
	nicDriver(t, node)
	createObj(t, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: gpuClaim(ns, "", nodesimtest.DeviceClassGPU).Spec}})
	trainer := claimPod(t, ns, "trainer", node, "one-gpu", true)
	createObj(t, gpuClaim(ns, "nic", "dra.net"))
	nic := claimPod(t, ns, "nic-user", node, "nic", false)
	cpu := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "monitoring", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "exporter", Image: "exporter:1"}}}}
	createObj(t, cpu)
	waitFor(t, 20*time.Second, "the trainer's claim prepared", func() (bool, string) {
		got := &corev1.Pod{}
		_ = suite.c.Get(ctx, client.ObjectKeyFromObject(trainer), got)
		return slices.Contains(got.Finalizers, nodesim.FinalizerDRAPrepared) && len(got.Status.ResourceClaimStatuses) == 1, fmt.Sprint(got.Finalizers, got.Status.ResourceClaimStatuses)
	})

	rec := recordDRA(t, node)
	startController(t, RealClock{}, nil)
	ro := newRollout(ns, ns, oldDriver, newDriver)
	ro.Spec.Canary.Count = new(int32(0))
	create(t, ro)
	waitPhase(t, ns, v1alpha1.PhaseCompleted, 90*time.Second)
	rec.Stop()
	assertDone(t, nodes, newDriver)
	for _, p := range nodesimtest.SwapOrderProblems(rec.Samples(node), newDriver) {
		t.Error(p)
	}

	// The GPU pod was evicted and its claim went with it; the others stay.
	if err := suite.c.Get(ctx, client.ObjectKeyFromObject(trainer), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the trainer pod after the swap: %v, want it evicted", err)
	}
	for _, p := range []*corev1.Pod{nic, cpu} {
		got := &corev1.Pod{}
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("pod %s after the swap: %v, deleting %v; want it left running", p.Name, err, got.DeletionTimestamp)
		}
	}
	waitEvent(t, ns, "NodeDraining", "stopping the DRA kubelet plugin before the driver swap")
	waitEvent(t, ns, "NodeSoaking", "ResourceSlices publish driverVersion "+planner.SemverForm(newDriver))
}

// TestDRAClaimNeverReleases: a GPU claim reserved for a consumer that never
// lets it go fails the node at the drain timeout, the claim named; the
// driver label never moves and the plugin, needed to unprepare it, is never
// stopped.
func TestDRAClaimNeverReleases(t *testing.T) {
	env(t)
	ctx := context.Background()
	const ns = "dra-stuck"
	nodes := draPool(t, ns, 1, oldDriver)
	node := nodes[0]
	ensureNamespace(t, ns)
	claim := gpuClaim(ns, "stuck", nodesimtest.DeviceClassGPU)
	createObj(t, claim)
	// Allocated on the node and reserved for a consumer that is no pod:
	// the claim controller leaves such an entry alone, so nothing frees it.
	claim.Status = resourcev1.ResourceClaimStatus{
		Allocation: &resourcev1.AllocationResult{
			Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
				Request: "dev", Driver: v1alpha1.DRADriverGPU, Pool: node, Device: "gpu-1",
			}}},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
			}}}},
		},
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{APIGroup: "batch.example.com", Resource: "gangs", Name: "ghost", UID: "5d1d4c4e-0000-4000-8000-000000000001"}},
	}
	if err := suite.c.Status().Update(ctx, claim); err != nil {
		t.Fatalf("write the claim's status: %v", err)
	}

	rec := recordDRA(t, node)
	startController(t, RealClock{}, nil)
	ro := newRollout(ns, ns, oldDriver, newDriver)
	ro.Spec.Canary.Count = new(int32(0))
	ro.Spec.Timeouts.Drain = metav1.Duration{Duration: 5 * time.Second}
	create(t, ro)
	start := time.Now()
	waitEvent(t, ns, "NodeRollingBack", "drain did not finish within 5s: claim "+ns+"/stuck still allocated")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the node failed %s after the rollout began, long past its drain timeout of 5s", took)
	}
	waitPhase(t, ns, v1alpha1.PhaseStalled, 30*time.Second)
	rec.Stop()
	samples := rec.Samples(node)
	if i := slices.IndexFunc(samples, func(s nodesimtest.DRASample) bool { return s.Before.Driver == newDriver || s.After.Driver == newDriver }); i >= 0 {
		t.Errorf("the driver label moved (sample %d) under a claim still allocated", i)
	}
	if i := slices.IndexFunc(samples, func(s nodesimtest.DRASample) bool {
		return s.Before.Plugin == v1alpha1.DRAPluginPaused || s.After.Plugin == v1alpha1.DRAPluginPaused || !s.PluginRunning
	}); i >= 0 {
		t.Errorf("the plugin was stopped (sample %d) while a claim needed it", i)
	}
}

// TestDRAComputeDomainMovesAsOne: with the ComputeDomain label as the
// maintenance domain, the two nodes whose pods hold channel claims of one
// ComputeDomain (no node carries its label) start in one pass, record
// their domain, and return in one pass; an idle DRA node goes by itself.
func TestDRAComputeDomainMovesAsOne(t *testing.T) {
	env(t)
	ctx := context.Background()
	const ns = "dra-cd"
	const domain = "6a4f1c2e-cd00-4000-8000-00000000cd01"
	nodes := draPool(t, ns, 3, oldDriver)
	ensureNamespace(t, ns)
	params := fmt.Sprintf(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":%q,"allocationMode":"Single"}`, domain)
	for i, node := range nodes[:2] {
		c := gpuClaim(ns, fmt.Sprintf("channel-%d", i), nodesimtest.DeviceClassChannel)
		c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriverComputeDomain, Parameters: runtime.RawExtension{Raw: []byte(params)}},
		}}}
		createObj(t, c)
		claimPod(t, ns, fmt.Sprintf("worker-%d", i), node, c.Name, false)
	}

	startController(t, RealClock{}, nil)
	ro := newRollout(ns, ns, oldDriver, newDriver)
	ro.Spec.Canary.Count = new(int32(0))
	ro.Spec.ParallelNodes = 2
	ro.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	ro.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelComputeDomain, MaxNodes: 2}
	create(t, ro)
	waitPhase(t, ns, v1alpha1.PhaseCompleted, 120*time.Second)
	assertDone(t, nodes, newDriver)

	started := map[string]bool{}
	for _, e := range events(t, ns) {
		for _, name := range nodes[:2] {
			if strings.HasPrefix(e, "NodeDraining: node "+name+":") && strings.Contains(e, "of maintenance domain "+domain+" (2 nodes, starting as one)") {
				started[name] = true
			}
		}
	}
	if len(started) != 2 {
		t.Errorf("the ComputeDomain's nodes started as one: %v; events %q", started, events(t, ns))
	}
	var since []string
	for _, name := range nodes[:2] {
		n := getNode(t, name)
		if got := n.Annotations[v1alpha1.AnnotationComputeDomain]; got != domain {
			t.Errorf("node %s records ComputeDomain %q, want %s", name, got, domain)
		}
		since = append(since, n.Annotations[v1alpha1.AnnotationSince])
	}
	if since[0] != since[1] {
		t.Errorf("the ComputeDomain returned over several passes: Done since %v", since)
	}
	if got := getNode(t, nodes[2]).Annotations[v1alpha1.AnnotationComputeDomain]; got != "" {
		t.Errorf("the idle node records ComputeDomain %q", got)
	}
	_ = ctx
}
