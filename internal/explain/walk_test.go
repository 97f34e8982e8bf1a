package explain

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

func ready() []any {
	return []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "Applied"}}
}

func obj(apiVersion, kind, ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec, "status": status}}
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetGeneration(1)
	status["observedGeneration"] = int64(1)
	return u
}

// converged builds what a cluster reads once it runs e: the state Walk
// must call converged, and each test breaks one thing of.
func converged(t *testing.T) (*fleet.Fleet, gate.Expected, Observed) {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	e := gate.Expect(f, "stg-h100", rev)
	o := Observed{Observed: gate.Observed{Kustomizations: map[string]*unstructured.Unstructured{}, HelmReleases: map[string]*unstructured.Unstructured{}, NVIDIADrivers: map[string]*unstructured.Unstructured{}}, Sources: map[string]*unstructured.Unstructured{}, Dependencies: map[string]*unstructured.Unstructured{}}
	o.Sources["flux-system/flux-system"] = obj(apiSource, "GitRepository", "flux-system", "flux-system", map[string]any{}, map[string]any{"conditions": ready(), "artifact": map[string]any{"revision": "main@sha1:" + rev}})
	for _, k := range e.Kustomizations {
		o.Kustomizations[k] = obj(apiKustomization, "Kustomization", "flux-system", k, map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}, map[string]any{"conditions": ready(), "lastAppliedRevision": "main@sha1:" + rev})
	}
	for key, v := range e.HelmReleases {
		ns, name, _ := strings.Cut(key, "/")
		o.HelmReleases[key] = obj(apiHelmRelease, "HelmRelease", ns, name, map[string]any{}, map[string]any{"conditions": ready(), "history": []any{map[string]any{"chartVersion": v}}})
	}
	o.ClusterPolicy = obj("nvidia.com/v1", "ClusterPolicy", "", "cluster-policy", map[string]any{"driver": map[string]any{"useNvidiaDriverCRD": true}}, map[string]any{"state": "ready"})
	for _, n := range e.NVIDIADrivers {
		o.NVIDIADrivers[n] = obj("nvidia.com/v1alpha1", "NVIDIADriver", "", n, map[string]any{}, map[string]any{"state": "ready"})
	}
	for i := range e.Pools[0].Nodes {
		o.Nodes = append(o.Nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("h100-%d", i), Labels: map[string]string{"nvidia.com/gpu.product": e.Pools[0].Product, "nvidia.com/gpu.present": "true", v1alpha1.LabelGFDDriverFull: e.Release.Driver, v1alpha1.LabelDriver: e.Release.Driver}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		})
	}
	n := int32(len(o.Nodes))
	o.Rollout = &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: e.Rollout, Generation: 1},
		Spec:       v1alpha1.DriverRolloutSpec{TargetVersion: e.Release.Driver, FailureBudget: int32(e.MaxQuarantined), NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.present": "true"}}},
		Status: v1alpha1.DriverRolloutStatus{ObservedGeneration: 1, Phase: v1alpha1.PhaseCompleted, Total: n, Nodes: v1alpha1.NodeCounts{Done: n},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "AllNodesDone"}}},
	}
	return f, e, o
}

func TestWalkConverged(t *testing.T) {
	f, e, o := converged(t)
	a := Walk(f, e, o)
	if a.Verdict != Converged || a.At != nil {
		t.Fatalf("verdict %s at %+v", a.Verdict, a.At)
	}
	var b bytes.Buffer
	if err := WriteText(&b, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stg-h100 runs r2026-06 (driver 570.172.08) at 0123456789ab: every link holds") {
		t.Errorf("text:\n%s", b.String())
	}
}

// TestWalkProgressing: a rollout moving a node is on its way, not broken;
// the node in flight is the link that decides, and nothing is broken.
func TestWalkProgressing(t *testing.T) {
	f, e, o := converged(t)
	o.Rollout.Status.Phase, o.Rollout.Status.Conditions = v1alpha1.PhaseProgressing, nil
	o.Rollout.Status.Nodes.Done--
	n := &o.Nodes[1]
	n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
	n.Labels[v1alpha1.LabelRollout], n.Labels[v1alpha1.LabelPhase] = e.Rollout, string(v1alpha1.NodeInstalling)
	n.Spec.Unschedulable = true // the rollout's own cordon
	a := Walk(f, e, o)
	if a.Verdict != Progressing || a.Broken() != nil {
		t.Fatalf("verdict %s, broken %+v", a.Verdict, a.Broken())
	}
	if a.At.Step != StepRollout || !strings.Contains(a.At.Message, "Progressing") {
		t.Errorf("at %+v, want the rollout progressing", a.At)
	}
	var node *Node
	for i := range a.Nodes {
		if a.Nodes[i].Name == n.Name {
			node = &a.Nodes[i]
		}
	}
	if node == nil || node.Phase != "Installing" || node.AdminCordoned || !node.Cordoned || node.OnTarget {
		t.Errorf("node %+v: want Installing, cordoned by the rollout itself, not on target", node)
	}
}

// TestWalkNodeWithoutDriverLabel: a node on the release's driver that no
// NVIDIADriver of the release selects is the gate's driver-label check,
// said for the node. Without the label, gpufleet-controller labels it at
// its next pass (on its way, with the controller's logs to look at);
// labelled for another driver, a person sets the label.
func TestWalkNodeWithoutDriverLabel(t *testing.T) {
	f, e, o := converged(t)
	delete(o.Nodes[2].Labels, v1alpha1.LabelDriver)
	a := Walk(f, e, o)
	if a.Verdict != Progressing || a.At.Step != StepNode || a.At.Object.Name != "h100-2" || a.At.Next != controllerLogs {
		t.Fatalf("verdict %s at %+v, want node h100-2 on its way, next the controller's logs", a.Verdict, a.At)
	}
	if !strings.Contains(a.At.Message, "has no gpufleet.io/driver label") || !strings.Contains(a.At.Message, "gpufleet-controller labels it with the driver it runs at its next pass") {
		t.Errorf("message %q", a.At.Message)
	}

	o.Nodes[2].Labels[v1alpha1.LabelDriver] = "550.54.15"
	a = Walk(f, e, o)
	if a.Verdict != Broken || a.At.Step != StepNode || a.At.Object.Name != "h100-2" {
		t.Fatalf("verdict %s at %+v, want node h100-2 broken", a.Verdict, a.At)
	}
	if want := "kubectl label node h100-2 gpufleet.io/driver=" + e.Release.Driver + " --overwrite"; a.At.Next != want {
		t.Errorf("next %q, want %q", a.At.Next, want)
	}
	if !strings.Contains(a.At.Message, "gpufleet.io/driver label is 550.54.15") {
		t.Errorf("message %q", a.At.Message)
	}
}

// TestWalkCrashLoopingDriverPod: a driver pod that crash-loops is the
// broken link, with the command that shows its last logs.
func TestWalkCrashLoopingDriverPod(t *testing.T) {
	f, e, o := converged(t)
	o.DriverPods = []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-driver-daemonset-abc", Namespace: "gpu-operator"},
		Spec:       corev1.PodSpec{NodeName: "h100-0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "nvidia-driver-ctr", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}},
		}}},
	}}
	a := Walk(f, e, o)
	if a.Verdict != Broken || a.At.Step != StepDriverPod || a.At.Next != "kubectl -n gpu-operator logs nvidia-driver-daemonset-abc -c nvidia-driver-ctr --previous" {
		t.Fatalf("verdict %s at %+v", a.Verdict, a.At)
	}
	var b bytes.Buffer
	if err := WriteText(&b, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("text:\n%s", b.String())
	for _, want := range []string{"BROKEN at driverPod: Pod gpu-operator/nvidia-driver-daemonset-abc", "condition: ContainerWaiting=True (CrashLoopBackOff)", "next:      kubectl -n gpu-operator logs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestWalkBlockedAndAborted: what a broken step applies is blocked behind
// it, not broken again; an aborted rollout rolling back is on its way, and
// once Aborted its nodes are what counts.
func TestWalkBlockedAndAborted(t *testing.T) {
	f, e, o := converged(t)
	o.Kustomizations["config"].Object["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "False", "reason": "BuildFailed", "message": "kustomization path not found"}}
	delete(o.NVIDIADrivers, e.NVIDIADrivers[0])
	a := Walk(f, e, o)
	if a.At == nil || a.At.Object.Name != "config" || a.At.Next != "flux events --for Kustomization/config -n flux-system" {
		t.Fatalf("at %+v, want the config Kustomization", a.At)
	}
	for _, l := range a.Chain {
		if l.Step == StepNVIDIADriver && l.State != Blocked {
			t.Errorf("the missing NVIDIADriver is %s, want blocked behind config: %s", l.State, l.Message)
		}
	}

	f, e, o = converged(t)
	o.Rollout.Spec.Abort, o.Rollout.Spec.TargetVersion = true, "580.95.05"
	o.Rollout.Status.Phase, o.Rollout.Status.Conditions = v1alpha1.PhaseAborting, nil
	if a := Walk(f, e, o); a.Verdict != Progressing || a.At.Step != StepRollout || !strings.Contains(a.At.Message, "rolling its nodes back") {
		t.Errorf("aborting: verdict %s at %+v", a.Verdict, a.At)
	}
	o.Rollout.Status.Phase = v1alpha1.PhaseAborted
	if a := Walk(f, e, o); a.Verdict != Converged {
		t.Errorf("aborted with every node back: verdict %s at %+v", a.Verdict, a.At)
	}
}

// TestWalkTimeoutBelowStartupWhileWaiting: a Kustomization still waiting
// for its health checks, with a timeout shorter than the service's
// declared start-up, is broken already: it will give up first.
func TestWalkTimeoutBelowStartupWhileWaiting(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, o := converged(t)
	e := gate.Expect(f, "stg-h100", rev)
	for _, k := range e.Kustomizations {
		if o.Kustomizations[k] == nil {
			o.Kustomizations[k] = obj(apiKustomization, "Kustomization", "flux-system", k, map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}, map[string]any{"conditions": ready(), "lastAppliedRevision": "main@sha1:" + rev})
		}
	}
	vllm := o.Kustomizations["app-vllm"]
	vllm.Object["spec"].(map[string]any)["timeout"] = "5m"
	vllm.Object["status"].(map[string]any)["conditions"] = []any{
		map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing", "message": "Reconciliation in progress"},
		map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing", "message": "Running health checks with a timeout of 5m0s"},
	}
	a := Walk(f, e, o)
	if a.Verdict != Broken || a.At.Step != StepTimeout || a.At.Object.Name != "app-vllm" || !strings.Contains(a.At.Message, "spec.timeout 5m is shorter than the start-up time 15m0s declared by service vllm") {
		t.Fatalf("verdict %s at %+v", a.Verdict, a.At)
	}
}

// TestWalkDriverManagement: a ClusterPolicy that still runs the driver
// itself, on a cluster the fleet file gives NVIDIADrivers, is the broken
// link, on the ClusterPolicy, with the command that prints the fleet
// file's table as the cluster runs; while the operators step is not ok it
// is blocked behind it.
func TestWalkDriverManagement(t *testing.T) {
	f, e, o := converged(t)
	_ = unstructured.SetNestedField(o.ClusterPolicy.Object, false, "spec", "driver", "useNvidiaDriverCRD")
	a := Walk(f, e, o)
	if a.Verdict != Broken || a.At.Step != StepDriverManagement || a.At.Object.Kind != "ClusterPolicy" || a.At.Object.Name != "cluster-policy" {
		t.Fatalf("verdict %s at %+v, want the ClusterPolicy's driver management broken", a.Verdict, a.At)
	}
	if want := "gpufleet init --context " + f.Clusters["stg-h100"].Context + " --dry-run"; a.At.Next != want {
		t.Errorf("next %q, want %q", a.At.Next, want)
	}
	for _, want := range []string{"deletes every driver pod at once", `driver-management = "clusterpolicy" in [clusters.stg-h100.gpu-operator]`} {
		if !strings.Contains(a.At.Message, want) {
			t.Errorf("message %q lacks %q", a.At.Message, want)
		}
	}
	if !slices.Contains(a.At.Checks, gate.DriverManagementCheck()) {
		t.Errorf("the link names checks %v", a.At.Checks)
	}
	o.Kustomizations["operators"].Object["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout"}}
	a = Walk(f, e, o)
	for _, l := range a.Chain {
		if l.Step == StepDriverManagement && l.State != Blocked {
			t.Errorf("driver management %s while the operators step fails, want blocked: %s", l.State, l.Message)
		}
	}
}

// TestWalkNodeNotHeld: on the gpu-operator actuator, a node without the
// operator's skip label that its rollout has not released is broken, and
// says that gpufleet-controller holds it at its next pass.
func TestWalkNodeNotHeld(t *testing.T) {
	f := fleetVariant(t, adoptedFleet, false, false)
	e := gate.Expect(f, "cp", rev)
	o := convergedOn(e)
	delete(o.Nodes[1].Labels, v1alpha1.LabelOperatorUpgradeSkip)
	a := Walk(f, e, o)
	if a.Verdict != Broken || a.At.Step != StepNode || a.At.Object.Name != o.Nodes[1].Name || a.At.Next != controllerLogs {
		t.Fatalf("verdict %s at %+v, want node %s broken", a.Verdict, a.At, o.Nodes[1].Name)
	}
	if !strings.Contains(a.At.Message, "holds it at its next pass") || !slices.Contains(a.At.Checks, gate.PoolHeldCheck("h100")) {
		t.Errorf("link %+v", a.At)
	}
	// Released by its rollout: the operator's to move.
	o.Nodes[1].Labels[v1alpha1.LabelRollout], o.Nodes[1].Labels[v1alpha1.LabelPhase] = e.Rollout, string(v1alpha1.NodeInstalling)
	for _, l := range Walk(f, e, o).Chain {
		if slices.Contains(l.Checks, gate.PoolHeldCheck("h100")) {
			t.Errorf("a released node counts as not held: %+v", l)
		}
	}
}

// TestWalkDRANodeWaits: a DRA node in its swap says what it waits for, as
// its labels tell it: its plugin stopped until the new driver is Ready.
func TestWalkDRANodeWaits(t *testing.T) {
	f, e, o := converged(t)
	o.Rollout.Status.Phase, o.Rollout.Status.Conditions = v1alpha1.PhaseProgressing, nil
	o.Rollout.Status.Nodes.Done--
	n := &o.Nodes[1]
	n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
	n.Labels[v1alpha1.LabelRollout], n.Labels[v1alpha1.LabelPhase] = e.Rollout, string(v1alpha1.NodeInstalling)
	n.Labels[v1alpha1.LabelDRAPlugin] = v1alpha1.DRAPluginPaused
	n.Spec.Unschedulable = true
	a := Walk(f, e, o)
	for _, l := range a.Chain {
		if l.Step == StepNode && l.Object.Name == n.Name {
			if !strings.Contains(l.Message, "the node is Installing, and waits for the new driver's pod to be Ready; its DRA kubelet plugin stays stopped until then") {
				t.Errorf("the node's link says %q", l.Message)
			}
			return
		}
	}
	t.Errorf("no link of node %s in %+v", n.Name, a.Chain)
}
