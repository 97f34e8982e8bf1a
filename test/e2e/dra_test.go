package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
)

// draJobs is the namespace of TestDRAPool's workloads.
const draJobs = "training"

// draFleet is the fleet file of TestDRAPool: TestJoiningNode's (gpufleet's
// actuator, one node at a time), its canary approved by the policy.
func draFleet() string {
	ws, we := windowAround(true)
	src := joinFleet(ws, we)
	src = strings.Replace(src, "auto-approve-canary = false", "auto-approve-canary = true", 1)
	return strings.Replace(src, "# TestJoiningNode: gpufleet's own actuator; nodes join during the story.", "# TestDRAPool: gpufleet's own actuator; the pool's GPUs are handed out by DRA.", 1)
}

// TestDRAPool: on the real GPU Operator, a pool whose GPUs NVIDIA's DRA
// driver hands out (its kubelet plugin played by the node agent; the real
// scheduler allocates the claims, the real controller-manager makes and
// deletes the claims of templates). A release moves every node: on each,
// the pod holding a GPU claim is evicted and its claim released before the
// plugin stops, the plugin is gone before the driver label moves, and it
// is back, Ready, with the node's ResourceSlices republished on the new
// driver, before the node is Done; a CPU pod stays. The gate then reads
// the new driver from the slices.
func TestDRAPool(t *testing.T) {
	t.Parallel()
	w := newWorld(t, lab.Options{
		Clusters: []string{opCluster}, FleetTOML: []byte(draFleet()), ChartVersion: lab.ChartVersion,
		Pool:   nodesim.Pool{Name: lab.PoolName, Product: lab.Product, Nodes: opNodes, Driver: lab.DriverStable, DRA: true, GPUCount: 2},
		Record: 100 * time.Millisecond,
	})
	s := &story{t: t, w: w}
	var nodes []string
	var trainers []*corev1.Pod
	var cpu *corev1.Pod
	var rec *nodesimtest.DRARecorder

	s.step("render and first sync: the stable rollout completes, every node publishing its GPUs", func(w *world) {
		src, err := os.ReadFile(w.FleetFile)
		if err != nil {
			w.T.Fatal(err)
		}
		w.commitFleet(string(src), "gpufleet render: first render")
		w.WaitRollout(opCluster, lab.ReleaseStable, 2*time.Minute, v1alpha1.PhaseCompleted)
		nodes = slices.Sorted(maps.Keys(w.gpuNodes(opCluster)))
		for _, node := range nodes {
			w.waitSlices(node, lab.DriverStable)
		}
	})

	s.step("GPU jobs hold DRA claims, one on each node; a CPU pod beside them", func(w *world) {
		c := w.Client(opCluster)
		ctx := context.Background()
		create := func(o client.Object) {
			if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				w.T.Fatalf("create %T %s: %v", o, o.GetName(), err)
			}
		}
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: draJobs}})
		create(&resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: draJobs},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nodesimtest.DeviceClassGPU}}},
			}}}})
		for i, node := range nodes {
			p := trainerPod(fmt.Sprintf("trainer-%d", i), node)
			create(p)
			trainers = append(trainers, p)
		}
		cpu = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exporter", Namespace: draJobs},
			Spec: corev1.PodSpec{NodeName: nodes[0], Containers: []corev1.Container{{Name: "exporter", Image: "exporter:1"}}}}
		create(cpu)
		for _, p := range trainers {
			w.Eventually(time.Minute, "pod "+p.Name+" running with its claim prepared", func() (bool, string) {
				got := &corev1.Pod{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
					return false, err.Error()
				}
				return got.Status.Phase == corev1.PodRunning && slices.Contains(got.Finalizers, nodesim.FinalizerDRAPrepared) && len(got.Status.ResourceClaimStatuses) == 1,
					fmt.Sprintf("phase %s, finalizers %v, claims %v", got.Status.Phase, got.Finalizers, got.Status.ResourceClaimStatuses)
			})
		}
	})

	s.step("start the release: every node is swapped and the rollout completes", func(w *world) {
		rec = nodesimtest.RecordDRA(w.Client(opCluster), 50*time.Millisecond, nodes...)
		t.Cleanup(rec.Stop)
		if _, code := w.Mutate("start", lab.ReleaseGood); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		w.WaitApplied(opCluster, w.Push())
		w.WaitRollout(opCluster, lab.ReleaseGood, 6*time.Minute, v1alpha1.PhaseCompleted)
		rec.Stop()
	})

	s.check("on each node: claims released, then the plugin stopped, then the driver; the plugin back before Done", func(w *world) {
		for _, node := range nodes {
			for _, p := range nodesimtest.SwapOrderProblems(rec.Samples(node), lab.DriverGood) {
				w.T.Errorf("%s: %s", node, p)
			}
		}
	})

	s.check("the GPU jobs were evicted and their claims deleted; the CPU pod stays", func(w *world) {
		c := w.Client(opCluster)
		ctx := context.Background()
		for _, p := range trainers {
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				w.T.Errorf("pod %s after the rollout: %v, want it evicted", p.Name, err)
			}
		}
		var claims resourcev1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(draJobs)); err != nil {
			w.T.Fatal(err)
		}
		for _, cl := range claims.Items {
			if cl.DeletionTimestamp == nil {
				w.T.Errorf("claim %s left after its pod was evicted (reserved for %v)", cl.Name, cl.Status.ReservedFor)
			}
		}
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cpu), got); err != nil || got.DeletionTimestamp != nil || got.UID != cpu.UID {
			w.T.Errorf("the CPU pod after the rollout: %v (deleting %v); want the same pod left running", err, got.DeletionTimestamp)
		}
		var evs corev1.EventList
		if err := c.List(ctx, &evs); err != nil {
			w.T.Fatal(err)
		}
		stopped := map[string]bool{}
		for _, e := range evs.Items {
			if e.Reason == "NodeDraining" && strings.Contains(e.Message, "DRA kubelet plugin") {
				for _, node := range nodes {
					if strings.Contains(e.Message, "node "+node+":") {
						stopped[node] = true
					}
				}
			}
		}
		if len(stopped) != len(nodes) {
			w.T.Errorf("NodeDraining Events naming the DRA kubelet plugin for %v, want each of %v", stopped, nodes)
		}
	})

	s.check("the gate reads the new driver from the ResourceSlices and passes", func(w *world) {
		for _, node := range nodes {
			w.waitSlices(node, lab.DriverGood)
		}
		if out, code := w.Gate("staging"); code != 0 {
			w.T.Errorf("gate exit %d:\n%s", code, out)
		}
	})
}

// trainerPod is a pod on node holding one GPU through a claim made from
// the template one-gpu; the scheduler allocates it there.
func trainerPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: draJobs},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
			}}},
			TerminationGracePeriodSeconds: new(int64(0)),
			ResourceClaims:                []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}},
			Containers: []corev1.Container{{Name: "train", Image: "trainer:1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
}

// waitSlices waits until node's gpu.nvidia.com ResourceSlices publish
// driver, and only it.
func (w *world) waitSlices(node, driver string) {
	w.T.Helper()
	c := w.Client(opCluster)
	want := []string{planner.SemverForm(driver)}
	w.Eventually(time.Minute, node+" publishing driver "+driver, func() (bool, string) {
		got, err := nodesimtest.SliceVersions(context.Background(), c, node)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), fmt.Sprintf("slices publish %v", got)
	})
}
