package gate

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

func exampleExpect(t *testing.T, cluster string) Expected {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil // the stack's Kustomizations are checked the same way
	return Expect(f, cluster, rev)
}

// healthy builds the observations of a cluster that converged on e.
func healthy(e Expected) Observed {
	o := Observed{Kustomizations: map[string]*unstructured.Unstructured{}, HelmReleases: map[string]*unstructured.Unstructured{}, NVIDIADrivers: map[string]*unstructured.Unstructured{}}
	for _, k := range e.Kustomizations {
		o.Kustomizations[k] = fluxObject("Kustomization", k, map[string]any{"lastAppliedRevision": "main@sha1:" + rev})
	}
	for key, v := range e.HelmReleases {
		o.HelmReleases[key] = fluxObject("HelmRelease", key, map[string]any{"history": []any{map[string]any{"chartVersion": v}}})
	}
	o.ClusterPolicy = &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"driver": map[string]any{"useNvidiaDriverCRD": e.DriverManagement == fleet.DriverManagementNVIDIADriver}},
		"status": map[string]any{"state": "ready"},
	}}
	for _, n := range e.NVIDIADrivers {
		o.NVIDIADrivers[n] = &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": n}, "status": map[string]any{"state": "ready"}}}
	}
	for _, p := range e.Pools {
		for i := 0; i < p.Nodes; i++ {
			o.Nodes = append(o.Nodes, corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-" + string(rune('a'+i)), Labels: map[string]string{
					"nvidia.com/gpu.product": p.Product, "gpufleet.io/pool": p.Name, v1alpha1.LabelGFDDriverFull: e.Release.Driver,
					"gpufleet.io/driver": e.Release.Driver, v1alpha1.LabelOperatorUpgradeSkip: "true",
				}},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	if e.ControllerImage != "" {
		o.Controller = controllerDeployment(e.ControllerImage, 2, 2)
	}
	o.Rollout = &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: e.Rollout, Generation: 2},
		Spec:       v1alpha1.DriverRolloutSpec{TargetVersion: e.Release.Driver, FailureBudget: 1},
		Status: v1alpha1.DriverRolloutStatus{ObservedGeneration: 2, Phase: v1alpha1.PhaseCompleted, Total: 4, Nodes: v1alpha1.NodeCounts{Done: 4},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue}}},
	}
	return o
}

func fluxObject(kind, name string, status map[string]any) *unstructured.Unstructured {
	status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "ok", "lastTransitionTime": "2026-12-01T00:00:00Z"}}
	status["observedGeneration"] = int64(1)
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetKind(kind)
	u.SetName(name)
	u.SetGeneration(1)
	return u
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(e Expected, o *Observed)
		// want is the one failing check and a piece of its message.
		want, msg string
	}{
		{"healthy", func(Expected, *Observed) {}, "", ""},
		{"Kustomization not Ready", func(_ Expected, o *Observed) {
			_ = unstructured.SetNestedSlice(o.Kustomizations["config"].Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout waiting for NVIDIADriver", "lastTransitionTime": "2026-12-01T00:00:00Z"}}, "status", "conditions")
		}, "flux/Kustomization/config", "timeout waiting for NVIDIADriver"},
		{"Kustomization suspended", func(_ Expected, o *Observed) {
			_ = unstructured.SetNestedField(o.Kustomizations["operators"].Object, true, "spec", "suspend")
		}, "flux/Kustomization/operators", "suspended"},
		{"Kustomization at a stale revision", func(_ Expected, o *Observed) {
			_ = unstructured.SetNestedField(o.Kustomizations["lifecycle"].Object, "main@sha1:fedcba", "status", "lastAppliedRevision")
		}, "flux/Kustomization/lifecycle", "has not applied the expected revision"},
		{"Kustomization missing", func(_ Expected, o *Observed) { o.Kustomizations["config"] = nil }, "flux/Kustomization/config", "does not exist"},
		{"HelmRelease at the wrong chart version", func(_ Expected, o *Observed) {
			_ = unstructured.SetNestedSlice(o.HelmReleases["gpu-operator/gpu-operator"].Object, []any{map[string]any{"chartVersion": "v24.9.2"}}, "status", "history")
		}, "flux/HelmRelease/gpu-operator/gpu-operator", "chart v24.9.2 is deployed, v25.3.4 expected"},
		{"ClusterPolicy not ready", func(_ Expected, o *Observed) {
			o.ClusterPolicy.Object["status"] = map[string]any{"state": "notReady"}
		}, "gpu-operator/ClusterPolicy", "not ready"},
		{"node on the old driver", func(_ Expected, o *Observed) { o.Nodes[1].Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15" }, "nodes/h100/driver", "h100-b=550.54.15"},
		{"node on the driver without its gpufleet.io/driver label", func(_ Expected, o *Observed) {
			delete(o.Nodes[2].Labels, "gpufleet.io/driver")
		}, "nodes/h100/driver-label", "selected by no NVIDIADriver of the release, so the operator may take the driver away: h100-c=none. gpufleet-controller labels a node without gpufleet.io/driver at its next pass (h100-c): is it running, and is the lifecycle step applied?"},
		{"node on the driver labelled for another", func(_ Expected, o *Observed) { o.Nodes[0].Labels["gpufleet.io/driver"] = "550.54.15" }, "nodes/h100/driver-label", "h100-a=550.54.15. a node labelled for another driver keeps it: label it gpufleet.io/driver=570.172.08"},
		// The controller's own label on a node it is rolling back, before the driver changes.
		{"node rolling back, label flipped first", func(_ Expected, o *Observed) {
			o.Nodes[3].Labels["gpufleet.io/driver"] = "550.54.15"
			o.Nodes[3].Labels[v1alpha1.LabelPhase] = string(v1alpha1.NodeRollingBack)
		}, "", ""},
		// A node on another driver is told once, by the driver check, whatever its label.
		{"node on the old driver and labelled for it", func(_ Expected, o *Observed) {
			o.Nodes[1].Labels[v1alpha1.LabelGFDDriverFull], o.Nodes[1].Labels["gpufleet.io/driver"] = "550.54.15", "550.54.15"
		}, "nodes/h100/driver", "h100-b=550.54.15"},
		// Nodes whose GPUs NVIDIA's DRA driver hands out: its slices say
		// the driver too, in semver (570.172.8 is 570.172.08).
		{"DRA slices agree with the label", func(_ Expected, o *Observed) {
			o.DRA = draNodes("h100-a", "570.172.8", "h100-b", "570.172.8")
		}, "", ""},
		{"DRA slices on the driver, no label", func(_ Expected, o *Observed) {
			o.DRA = draNodes("h100-a", "570.172.8")
			delete(o.Nodes[0].Labels, v1alpha1.LabelGFDDriverFull)
		}, "", ""},
		{"DRA slices on the old driver, no label", func(_ Expected, o *Observed) {
			o.DRA = draNodes("h100-a", "550.54.15")
			delete(o.Nodes[0].Labels, v1alpha1.LabelGFDDriverFull)
		}, "nodes/h100/driver", "on another driver: h100-a=550.54.15 (ResourceSlices)"},
		{"DRA slices disagree with the label", func(_ Expected, o *Observed) {
			o.DRA = draNodes("h100-b", "550.54.15")
		}, "nodes/h100/driver", "disagree, so which one runs is not known: h100-b: nvidia.com/cuda.driver-version.full says 570.172.08, its ResourceSlices of gpu.nvidia.com (h100-b-gpu.nvidia.com-550.54.15) say 550.54.15"},
		{"DRA slices of one node disagree", func(_ Expected, o *Observed) {
			o.DRA = draNodes("h100-c", "570.172.8", "h100-c", "550.54.15")
		}, "nodes/h100/driver", "h100-c: its ResourceSlices of gpu.nvidia.com (h100-c-gpu.nvidia.com-550.54.15, h100-c-gpu.nvidia.com-570.172.8) publish more than one driver: 550.54.15 and 570.172.8"},
		{"another DRA driver's slices say nothing of the GPU driver", func(_ Expected, o *Observed) {
			o.DRA = dra.Nodes([]resourcev1.ResourceSlice{draSlice("h100-a", "dra.net", "1.0.0")}, v1alpha1.DRADriverGPU)
		}, "", ""},
		{"node with an XID", func(_ Expected, o *Observed) {
			o.Nodes[2].Status.Conditions = append(o.Nodes[2].Status.Conditions, corev1.NodeCondition{Type: "GpuXidError", Status: corev1.ConditionTrue})
		}, "nodes/h100/gpu-errors", "h100-c: GpuXidError"},
		{"node NotReady", func(_ Expected, o *Observed) { o.Nodes[0].Status.Conditions[0].Status = corev1.ConditionFalse }, "nodes/h100/ready", "not Ready: h100-a"},
		{"too many quarantined nodes", func(_ Expected, o *Observed) {
			o.Nodes[0].Labels[v1alpha1.LabelQuarantined], o.Nodes[1].Labels[v1alpha1.LabelQuarantined] = "true", "true"
		}, "nodes/quarantined", "more quarantined nodes than the failure budget allows"},
		{"DriverRollout Stalled", func(_ Expected, o *Observed) {
			o.Rollout.Status.Conditions = append(o.Rollout.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Message: "canary h100-a failed its install"})
		}, "lifecycle/DriverRollout/r2026-06", "Stalled: canary h100-a failed its install"},
		{"DriverRollout over budget", func(_ Expected, o *Observed) { o.Rollout.Status.BudgetUsed = 2 }, "lifecycle/DriverRollout/r2026-06", "failure budget is exceeded"},
		{"DriverRollout completed with a node rolled back", func(_ Expected, o *Observed) {
			// Within the budget, but a node is left on the old driver: the
			// gate says so by name (issue 16), not as a bare Stalled.
			msg := "3 of 4 nodes on 580.95.05, 1 rolled back, 0 quarantined: 1 node failed and is not on 580.95.05"
			o.Rollout.Status.Phase, o.Rollout.Status.BudgetUsed, o.Rollout.Status.Nodes = v1alpha1.PhaseCompletedWithFailures, 1, v1alpha1.NodeCounts{Done: 3, RolledBack: 1}
			o.Rollout.Status.Conditions = []metav1.Condition{
				{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionFalse},
				{Type: v1alpha1.ConditionCompletedWithFailures, Status: metav1.ConditionTrue, Message: msg},
				{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Message: msg},
			}
		}, "lifecycle/DriverRollout/r2026-06", "CompletedWithFailures: 3 of 4 nodes on 580.95.05, 1 rolled back"},
		{"DriverRollout not done", func(_ Expected, o *Observed) {
			o.Rollout.Status.Phase = v1alpha1.PhaseWaitingForApproval
			o.Rollout.Status.Conditions = nil
		}, "lifecycle/DriverRollout/r2026-06", "has not completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := exampleExpect(t, "stg-h100")
			o := healthy(e)
			tt.break_(e, &o)
			checks := Evaluate(e, o)
			var failed []Check
			for _, c := range checks {
				if c.Status != Pass {
					failed = append(failed, c)
				}
			}
			if tt.want == "" {
				if len(failed) > 0 {
					t.Fatalf("a healthy cluster failed: %+v", failed)
				}
				if len(checks) < 10 {
					t.Errorf("only %d checks made", len(checks))
				}
				return
			}
			if len(failed) != 1 || failed[0].Name.String() != tt.want || !strings.Contains(failed[0].Message, tt.msg) {
				t.Errorf("want exactly %s failing with %q, got %+v", tt.want, tt.msg, failed)
			}
		})
	}
}

// draSlice is a ResourceSlice of driver for node, whose one device
// publishes a driver version.
func draSlice(node, driver, version string) resourcev1.ResourceSlice {
	return resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver + "-" + version}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: new(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			dra.AttributeProductName:           {StringValue: new("NVIDIA H100 80GB HBM3")},
			v1alpha1.DRAAttributeDriverVersion: {VersionValue: new(version)},
		}}},
	}}
}

// draNodes reads the GPU DRA slices of pairs of node and version.
func draNodes(nodeVersions ...string) map[string]*dra.Node {
	var list []resourcev1.ResourceSlice
	for i := 0; i < len(nodeVersions); i += 2 {
		list = append(list, draSlice(nodeVersions[i], v1alpha1.DRADriverGPU, nodeVersions[i+1]))
	}
	return dra.Nodes(list, v1alpha1.DRADriverGPU)
}

func TestVerdict(t *testing.T) {
	for _, tt := range []struct {
		statuses []Status
		want     Status
	}{
		{[]Status{Pass, Pass}, Pass},
		{[]Status{Pass, Unknown}, Unknown},
		{[]Status{Unknown, Fail}, Fail},
		{nil, Unknown},
	} {
		r := &Report{}
		for _, s := range tt.statuses {
			r.Checks = append(r.Checks, Check{Status: s})
		}
		if got := r.Verdict(); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.statuses, got, tt.want)
		}
	}
}

// On the gpu-operator actuator one NVIDIADriver selects the whole pool, by
// product alone: gpufleet.io/driver means nothing there and is not asked for.
func TestDriverLabelOnlyOnGPUFleetActuator(t *testing.T) {
	data, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	// Without the OFED driver, which this actuator cannot move.
	noOFED := fleettest.WithoutOFEDDriver(string(data))
	src := strings.Replace(noOFED, "\n[policy]\n", "\n[policy]\nactuator = \"gpu-operator\"\n", 1)
	if src == noOFED {
		t.Fatal("examples/fleet.toml has no [policy] table to set the actuator in")
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	e := Expect(f, "stg-h100", rev)
	if e.DriverLabel {
		t.Fatal("DriverLabel set on the gpu-operator actuator")
	}
	o := healthy(e)
	for _, n := range o.Nodes {
		delete(n.Labels, "gpufleet.io/driver")
	}
	for _, c := range Evaluate(e, o) {
		if c.Status != Pass {
			t.Errorf("%s failed on the gpu-operator actuator: %s", c.Name, c.Message)
		}
		if c.Name.Kind == CheckPoolDriverLabel {
			t.Errorf("%s checked on the gpu-operator actuator", c.Name)
		}
	}
	if !exampleExpect(t, "stg-h100").DriverLabel {
		t.Error("DriverLabel not set on the default (gpufleet) actuator")
	}
}

// adoptedExpect is cluster of render's adopted fleet: cp keeps its driver
// with the ClusterPolicy on the gpu-operator actuator, nd runs NVIDIADrivers
// on gpufleet's.
func adoptedExpect(t *testing.T, cluster string) Expected {
	t.Helper()
	f, err := fleet.Load("../render/testdata/adopted/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	return Expect(f, cluster, rev)
}

// TestEvaluateAdoption: the checks that say where a cluster's adoption
// stands. The ClusterPolicy must manage the driver as the fleet file says
// (both ways round, each with what to set), and on the gpu-operator
// actuator every node must be held by gpufleet-controller or released by
// its rollout.
func TestEvaluateAdoption(t *testing.T) {
	setCRD := func(v any) func(Expected, *Observed) {
		return func(_ Expected, o *Observed) {
			if v == nil {
				delete(o.ClusterPolicy.Object["spec"].(map[string]any)["driver"].(map[string]any), "useNvidiaDriverCRD")
				return
			}
			_ = unstructured.SetNestedField(o.ClusterPolicy.Object, v, "spec", "driver", "useNvidiaDriverCRD")
		}
	}
	node := func(i int, mutate func(n *corev1.Node)) func(Expected, *Observed) {
		return func(_ Expected, o *Observed) { mutate(&o.Nodes[i]) }
	}
	unheld := func(n *corev1.Node) { delete(n.Labels, v1alpha1.LabelOperatorUpgradeSkip) }
	phase := func(p v1alpha1.NodePhase) func(n *corev1.Node) {
		return func(n *corev1.Node) {
			unheld(n)
			n.Labels[v1alpha1.LabelRollout], n.Labels[v1alpha1.LabelPhase] = "r1", string(p)
		}
	}
	for _, tt := range []struct {
		name, cluster string
		break_        func(Expected, *Observed)
		// want are the failing checks, msg a piece of the first one's message.
		want []string
		msg  string
	}{
		{"NVIDIADriver mode as the fleet file says", "nd", func(Expected, *Observed) {}, nil, ""},
		{"ClusterPolicy mode as the fleet file says", "cp", func(Expected, *Observed) {}, nil, ""},
		{"NVIDIADrivers rendered, the ClusterPolicy runs the driver", "nd", setCRD(false), []string{"gpu-operator/driver-management"},
			`still runs the driver itself (nvidia-driver-daemonset, spec.driver.useNvidiaDriverCRD false): on a GPU Operator below v26.7.0 applying that deletes every driver pod at once. Set driver-management = "clusterpolicy" in [clusters.nd.gpu-operator] (gpufleet init writes it)`},
		{"useNvidiaDriverCRD absent: the chart's default, ClusterPolicy mode", "nd", setCRD(nil), []string{"gpu-operator/driver-management"}, "still runs the driver itself"},
		{"ClusterPolicy mode in the fleet file, NVIDIADriver mode on the cluster", "cp", setCRD(true), []string{"gpu-operator/driver-management"},
			`set driver-management = "nvidiadriver" in [clusters.cp.gpu-operator], or remove the key`},
		{"no ClusterPolicy", "cp", func(_ Expected, o *Observed) { o.ClusterPolicy = nil }, []string{"gpu-operator/ClusterPolicy", "gpu-operator/driver-management"}, "does not exist"},
		{"a node not held", "cp", node(1, unheld), []string{"nodes/h100/held"},
			"not under gpufleet yet, so the GPU Operator may upgrade them outside the rollout's policy: h100-b. gpufleet-controller holds a node with nvidia.com/gpu-driver-upgrade.skip=true at its next pass: is it running, and is the lifecycle step applied?"},
		{"a node the rollout released (Installing)", "cp", node(2, phase(v1alpha1.NodeInstalling)), nil, ""},
		{"a node released to roll back", "cp", node(2, phase(v1alpha1.NodeRollingBack)), nil, ""},
		{"a Done node the controller has not held again", "cp", node(3, phase(v1alpha1.NodeDone)), []string{"nodes/h100/held"}, "h100-d"},
		{"the skip label set but not true", "cp", node(0, func(n *corev1.Node) { n.Labels[v1alpha1.LabelOperatorUpgradeSkip] = "false" }), []string{"nodes/h100/held"}, "h100-a"},
		{"gpufleet's actuator holds nothing", "nd", node(0, unheld), nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := adoptedExpect(t, tt.cluster)
			o := healthy(e)
			tt.break_(e, &o)
			var failed []string
			var first Check
			for _, c := range Evaluate(e, o) {
				if c.Status != Pass {
					if failed == nil {
						first = c
					}
					failed = append(failed, c.Name.String())
				}
			}
			if diff := cmp.Diff(tt.want, failed); diff != "" {
				t.Fatalf("failing checks (-want +got):\n%s", diff)
			}
			if tt.msg != "" && !strings.Contains(first.Message, tt.msg) {
				t.Errorf("%s: message %q, want it to hold %q", first.Name, first.Message, tt.msg)
			}
		})
	}
	if e := adoptedExpect(t, "cp"); len(e.NVIDIADrivers) != 0 {
		t.Errorf("ClusterPolicy mode: NVIDIADrivers %v expected", e.NVIDIADrivers)
	}
}
