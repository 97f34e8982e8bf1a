package explain

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/argotest"
)

// TestEveryFailedCheckHasALink is the contract between the gate and
// explain, over random cluster states: random breakages of a converged
// cluster, for random clusters of the example fleet in both chart modes and
// on both actuators. Whenever gate.Evaluate fails a check, Walk does not
// say converged, and a link that is not ok names the check (Link.Checks).
// The one exception is deliberate: the DriverRollout of an aborted rollout,
// which never completes at the stable driver and is judged by its nodes
// (as promote's gate does).
//
// It fails listing every kind of check that no link of its own answers for
// (only the safety net, walker.uncovered, did), and every kind of
// gate.CheckKinds the random states never failed: a new kind of check
// fails here until the states below can break it and explain has its link.
func TestEveryFailedCheckHasALink(t *testing.T) {
	seen := map[gate.CheckKind]int{}
	netOnly := map[gate.CheckKind]string{}
	var problems []string
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 27))
		f, e, o := randomConverged(t, r)
		var did []string
		for range 1 + r.IntN(3) {
			did = append(did, breakOne(r, e, &o))
		}
		checks := gate.Evaluate(e, o.Observed)
		a := Walk(f, e, o)
		aborted := o.Rollout != nil && o.Rollout.Spec.Abort
		failing := 0
		for _, c := range checks {
			if c.Status == gate.Pass {
				continue
			}
			seen[c.Name.Kind]++
			exempt := c.Name.Kind == gate.CheckRollout && aborted
			if !exempt {
				failing++
			}
			links := linksFor(a, c.Name)
			switch {
			case len(links) == 0:
				problems = append(problems, fmt.Sprintf("seed %d (%s; %s): no link names failed check %s", seed, e.Cluster, strings.Join(did, ", "), c.Name))
				continue
			case !slices.ContainsFunc(links, func(l Link) bool { return l.Step != StepCheck }):
				netOnly[c.Name.Kind] = fmt.Sprintf("seed %d: %s (%s)", seed, c.Name, strings.Join(did, ", "))
			}
			if !exempt && !slices.ContainsFunc(links, func(l Link) bool { return l.State != OK }) {
				problems = append(problems, fmt.Sprintf("seed %d (%s; %s): the gate fails %s (%s) but its link is ok", seed, e.Cluster, strings.Join(did, ", "), c.Name, c.Message))
			}
		}
		if failing > 0 && a.Verdict == Converged {
			problems = append(problems, fmt.Sprintf("seed %d (%s; %s): %d checks fail, explain says converged", seed, e.Cluster, strings.Join(did, ", "), failing))
		}
	}
	for _, p := range problems[:min(len(problems), 20)] {
		t.Error(p)
	}
	var kinds []string
	for k, where := range netOnly {
		kinds = append(kinds, fmt.Sprintf("%s (e.g. %s)", k, where))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Errorf("no link of explain's own answers for checks of kind %s: give the kind its link", k)
	}
	for _, k := range gate.CheckKinds() {
		if k == gate.CheckConnect {
			continue // made by gate.Run for a cluster it cannot read; explain returns an *UnreadableError there
		}
		if seen[k] == 0 {
			t.Errorf("the random states never fail a check of kind %s: teach breakOne to break it, and explain to answer for it", k)
		}
	}
	t.Logf("failed checks by kind over the random states: %v", seen)
}

// linksFor are the links of the chain that name check id.
func linksFor(a *Answer, id gate.CheckID) []Link {
	var out []Link
	for _, l := range a.Chain {
		if slices.Contains(l.Checks, id) {
			out = append(out, l)
		}
	}
	return out
}

// randomConverged is a converged cluster chosen at random: of the example
// fleet, with its chart mode and actuator, of the fleet adopted as found
// that render's tests use (a ClusterPolicy-managed driver on the
// gpu-operator actuator under an adopted release; NVIDIADrivers beside an
// adopted Network Operator), or of render's fleet with a cluster on each
// GitOps engine.
func randomConverged(t *testing.T, r *rand.Rand) (*fleet.Fleet, gate.Expected, Observed) {
	t.Helper()
	var f *fleet.Fleet
	switch r.IntN(4) {
	case 0:
		f = fleetVariant(t, adoptedFleet, false, r.IntN(2) == 0)
	case 1:
		f = fleetVariant(t, argoFleet, r.IntN(3) == 0, true)
	default:
		f = fleetVariant(t, exampleFleet, r.IntN(3) == 0, r.IntN(2) == 0)
	}
	cluster := pick(r, f.ClusterNames())
	e := gate.Expect(f, cluster, rev)
	return f, e, convergedOn(e)
}

// TestConvergedOnConverges: the states the contract test breaks are
// converged to begin with, for the gate and for explain.
func TestConvergedOnConverges(t *testing.T) {
	for _, file := range []string{exampleFleet, adoptedFleet, argoFleet} {
		for _, operator := range []bool{false, true} {
			for _, manifests := range []bool{false, true} {
				if file == adoptedFleet && operator {
					continue // its policy says the actuator per cluster
				}
				if file == argoFleet && !manifests {
					continue // Argo CD needs the manifests chart mode
				}
				f := fleetVariant(t, file, operator, manifests)
				for _, c := range f.ClusterNames() {
					e := gate.Expect(f, c, rev)
					o := convergedOn(e)
					for _, ch := range gate.Evaluate(e, o.Observed) {
						if ch.Status != gate.Pass {
							t.Errorf("%s %s (operator %v, manifests %v): %s fails: %s", file, c, operator, manifests, ch.Name, ch.Message)
						}
					}
					if a := Walk(f, e, o); a.Verdict != Converged {
						t.Errorf("%s %s (operator %v, manifests %v): %s", file, c, operator, manifests, a.Summary)
					}
				}
			}
		}
	}
}

// The fleet files the random states are drawn from.
const (
	exampleFleet = "../../examples/fleet.toml"
	adoptedFleet = "../render/testdata/adopted/fleet.toml"
	argoFleet    = "../render/testdata/argocd/fleet.toml"
)

type variant struct {
	file                string
	operator, manifests bool
}

// fleetVariants are the variants of the fleet files, parsed once: Walk and
// Evaluate only read them.
var fleetVariants = map[variant]*fleet.Fleet{}

// fleetVariant is a fleet file without its serving stack, with the
// gpu-operator actuator for every cluster when operator is set, and its
// charts pre-rendered when manifests is.
func fleetVariant(t *testing.T, file string, operator, manifests bool) *fleet.Fleet {
	t.Helper()
	v := variant{file, operator, manifests}
	if f := fleetVariants[v]; f != nil {
		return f
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	if operator {
		// Without the OFED driver, which this actuator cannot move.
		src = strings.Replace(fleettest.WithoutOFEDDriver(src), "\n[policy]\n", "\n[policy]\nactuator = \"gpu-operator\"\n", 1)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	if manifests {
		f.Charts.Mode = fleet.ModeManifests
	}
	if file == exampleFleet {
		// gpufleet-controller installed by render, as where the fleet file
		// names its version.
		f.Controller.Image = "registry.internal.example/gpufleet/gpufleet-controller"
		for _, r := range f.Releases {
			r.Controller = "v0.9.0"
		}
	}
	fleetVariants[v] = f
	return f
}

// convergedOn is what a cluster that runs e reads: every object there and
// Ready, every node of every pool on the release's driver.
func convergedOn(e gate.Expected) Observed {
	o := Observed{Observed: gate.Observed{Kustomizations: map[string]*unstructured.Unstructured{}, HelmReleases: map[string]*unstructured.Unstructured{},
		Applications: map[string]*unstructured.Unstructured{},
		Deployments:  map[string]*unstructured.Unstructured{}, NVIDIADrivers: map[string]*unstructured.Unstructured{}},
		Sources: map[string]*unstructured.Unstructured{}, Dependencies: map[string]*unstructured.Unstructured{}}
	if len(e.Kustomizations) > 0 {
		o.Sources["flux-system/flux-system"] = obj(apiSource, "GitRepository", "flux-system", "flux-system", map[string]any{}, map[string]any{"conditions": ready(), "artifact": map[string]any{"revision": "main@sha1:" + rev}})
	}
	for _, a := range e.Applications {
		o.Applications[a] = argotest.Application(a, rev)
	}
	for _, k := range e.Kustomizations {
		o.Kustomizations[k] = obj(apiKustomization, "Kustomization", "flux-system", k, map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}, map[string]any{"conditions": ready(), "lastAppliedRevision": "main@sha1:" + rev})
	}
	for key, v := range e.HelmReleases {
		ns, name, _ := strings.Cut(key, "/")
		o.HelmReleases[key] = obj(apiHelmRelease, "HelmRelease", ns, name, map[string]any{}, map[string]any{"conditions": ready(), "history": []any{map[string]any{"chartVersion": v}}})
	}
	for key, label := range e.OperatorDeployments {
		ns, name, _ := strings.Cut(key, "/")
		o.Deployments[key] = operatorDeployment(ns, name, label, true)
	}
	if e.ControllerImage != "" {
		o.Controller = controllerDeployment(e.ControllerImage, true)
	}
	crd := e.DriverManagement == fleet.DriverManagementNVIDIADriver
	o.ClusterPolicy = obj("nvidia.com/v1", "ClusterPolicy", "", "cluster-policy", map[string]any{"driver": map[string]any{"useNvidiaDriverCRD": crd}}, map[string]any{"state": "ready"})
	for _, n := range e.NVIDIADrivers {
		o.NVIDIADrivers[n] = obj("nvidia.com/v1alpha1", "NVIDIADriver", "", n, map[string]any{}, map[string]any{"state": "ready"})
	}
	for _, p := range e.Pools {
		for i := range p.Nodes {
			labels := map[string]string{v1alpha1.LabelGFDProduct: p.Product, v1alpha1.LabelPool: p.Name, "nvidia.com/gpu.present": "true", v1alpha1.LabelGFDDriverFull: e.Release.Driver}
			if e.DriverLabel {
				labels[v1alpha1.LabelDriver] = e.Release.Driver
			}
			if e.Actuator == v1alpha1.ActuatorGPUOperator {
				labels[v1alpha1.LabelOperatorUpgradeSkip] = "true"
			}
			o.Nodes = append(o.Nodes, corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", p.Name, i), Labels: labels},
				Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
			})
		}
	}
	n := int32(len(o.Nodes))
	o.Rollout = &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: e.Rollout, Generation: 1},
		Spec:       v1alpha1.DriverRolloutSpec{TargetVersion: e.Release.Driver, FailureBudget: int32(e.MaxQuarantined), NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.present": "true"}}},
		Status: v1alpha1.DriverRolloutStatus{ObservedGeneration: 1, Phase: v1alpha1.PhaseCompleted, Total: n, Nodes: v1alpha1.NodeCounts{Done: n},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "AllNodesDone"}}},
	}
	return o
}

// operatorDeployment is an operator's Deployment as kstatus reads it:
// chart is its helm.sh/chart label, available whether its pods are up.
func operatorDeployment(ns, name, chart string, available bool) *unstructured.Unstructured {
	n := map[bool]int64{true: 1, false: 0}[available]
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns, "generation": int64(1), "labels": map[string]any{"helm.sh/chart": chart}},
		"spec":     map[string]any{"replicas": int64(1)},
		"status": map[string]any{
			"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": n, "availableReplicas": n,
			"conditions": []any{map[string]any{"type": "Available", "status": map[bool]string{true: "True", false: "False"}[available]}},
		},
	}}
}

// controllerDeployment is gpufleet-controller's Deployment running image.
func controllerDeployment(image string, available bool) *unstructured.Unstructured {
	u := operatorDeployment("gpufleet-system", "gpufleet-controller", "", available)
	u.Object["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "manager", "image": image}}}}
	return u
}

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func setStatus(u *unstructured.Unstructured, key string, v any) {
	u.Object["status"].(map[string]any)[key] = v
}

// breakOne breaks one thing of the cluster at random and says what.
func breakOne(r *rand.Rand, e gate.Expected, o *Observed) string {
	notReady := []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout waiting for: [Deployment/gpu-operator/gpu-operator status: 'InProgress']"}}
	reconciling := []any{map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing"}, map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing"}}
	switch r.IntN(8) {
	case 0:
		if len(e.Applications) > 0 {
			return breakApplication(r, e, o)
		}
		name := pick(r, e.Kustomizations)
		k := o.Kustomizations[name]
		if k == nil {
			return "kustomization " + name + " already gone"
		}
		switch r.IntN(6) {
		case 0:
			o.Kustomizations[name] = nil
			return "kustomization " + name + " missing"
		case 1:
			k.Object["spec"].(map[string]any)["suspend"] = true
			return "kustomization " + name + " suspended"
		case 2:
			setStatus(k, "conditions", notReady)
			return "kustomization " + name + " health check failed"
		case 3:
			setStatus(k, "conditions", reconciling)
			return "kustomization " + name + " reconciling"
		case 4:
			setStatus(k, "lastAppliedRevision", "main@sha1:fedcba9876543210")
			return "kustomization " + name + " at an old revision"
		default:
			k.Object["spec"].(map[string]any)["dependsOn"] = []any{map[string]any{"name": "elsewhere", "namespace": "team"}}
			return "kustomization " + name + " depends on a missing one"
		}
	case 1:
		if len(e.HelmReleases) > 0 {
			key := pick(r, keysOf(e.HelmReleases))
			u := o.HelmReleases[key]
			if u == nil {
				return "helmrelease gone"
			}
			switch r.IntN(4) {
			case 0:
				o.HelmReleases[key] = nil
				return "helmrelease " + key + " missing"
			case 1:
				u.Object["spec"].(map[string]any)["suspend"] = true
				setStatus(u, "conditions", notReady)
				return "helmrelease " + key + " suspended and failing"
			case 2:
				setStatus(u, "history", []any{map[string]any{"chartVersion": "v1.0.0"}})
				return "helmrelease " + key + " at another chart"
			default:
				setStatus(u, "conditions", reconciling)
				return "helmrelease " + key + " upgrading"
			}
		}
		if e.ControllerImage != "" && (len(e.OperatorDeployments) == 0 || r.IntN(2) == 0) {
			switch r.IntN(3) {
			case 0:
				o.Controller = nil
				return "gpufleet-controller missing"
			case 1:
				o.Controller = controllerDeployment(e.ControllerImage+"-old", true)
				return "gpufleet-controller at another version"
			default:
				o.Controller = controllerDeployment(e.ControllerImage, false)
				return "gpufleet-controller not available"
			}
		}
		key := pick(r, keysOf(e.OperatorDeployments))
		ns, name, _ := strings.Cut(key, "/")
		switch r.IntN(3) {
		case 0:
			o.Deployments[key] = nil
			return "deployment " + key + " missing"
		case 1:
			o.Deployments[key] = operatorDeployment(ns, name, name+"-v1.0.0", true)
			return "deployment " + key + " at another chart"
		default:
			o.Deployments[key] = operatorDeployment(ns, name, e.OperatorDeployments[key], false)
			return "deployment " + key + " not available"
		}
	case 2:
		if o.ClusterPolicy == nil {
			return "no ClusterPolicy to break"
		}
		switch r.IntN(3) {
		case 0:
			o.ClusterPolicy = nil
			return "no ClusterPolicy"
		case 1:
			setStatus(o.ClusterPolicy, "state", "notReady")
			return "ClusterPolicy notReady"
		default:
			crd, _, _ := unstructured.NestedBool(o.ClusterPolicy.Object, "spec", "driver", "useNvidiaDriverCRD")
			_ = unstructured.SetNestedField(o.ClusterPolicy.Object, !crd, "spec", "driver", "useNvidiaDriverCRD")
			return "ClusterPolicy's driver management flipped"
		}
	case 3:
		if len(e.NVIDIADrivers) == 0 {
			return "no NVIDIADriver to break"
		}
		name := pick(r, e.NVIDIADrivers)
		if r.IntN(2) == 0 || o.NVIDIADrivers[name] == nil {
			o.NVIDIADrivers[name] = nil
			return "NVIDIADriver " + name + " missing"
		}
		setStatus(o.NVIDIADrivers[name], "state", "notReady")
		return "NVIDIADriver " + name + " notReady"
	case 4, 5:
		if len(o.Nodes) == 0 {
			return "no node left"
		}
		i := r.IntN(len(o.Nodes))
		n := &o.Nodes[i]
		switch r.IntN(11) {
		case 0:
			// The GPU DRA driver's slices say the driver too: where they
			// disagree with the label, or say it alone.
			slices := &dra.Node{Name: n.Name, Slices: []string{n.Name + "-gpu.nvidia.com"}, DriverVersions: []string{"550.54.15"}}
			if o.DRA == nil {
				o.DRA = map[string]*dra.Node{}
			}
			switch r.IntN(3) {
			case 0:
				n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
				return n.Name + " on another driver"
			case 1:
				o.DRA[n.Name] = slices
				return n.Name + "'s DRA slices on another driver than its label"
			default:
				o.DRA[n.Name] = slices
				delete(n.Labels, v1alpha1.LabelGFDDriverFull)
				return n.Name + " on another driver by its DRA slices alone"
			}
		case 10:
			delete(n.Labels, v1alpha1.LabelOperatorUpgradeSkip)
			return n.Name + " not held"
		case 1:
			if r.IntN(2) == 0 {
				delete(n.Labels, v1alpha1.LabelDriver)
			} else {
				n.Labels[v1alpha1.LabelDriver] = "550.54.15"
			}
			return n.Name + " without its driver label"
		case 2:
			n.Status.Conditions[0].Status = corev1.ConditionFalse
			return n.Name + " NotReady"
		case 3:
			if len(e.SignalConditions) > 0 {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(pick(r, e.SignalConditions)), Status: corev1.ConditionTrue, Message: "Xid 79"})
			}
			return n.Name + " reports a GPU error"
		case 4:
			for j := range o.Nodes {
				if j == i || r.IntN(3) == 0 {
					o.Nodes[j].Labels[v1alpha1.LabelQuarantined] = "true"
				}
			}
			return "nodes quarantined"
		case 5:
			phase := pick(r, []v1alpha1.NodePhase{v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeSoaking, v1alpha1.NodeRollingBack, v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined, v1alpha1.NodeDone})
			n.Labels[v1alpha1.LabelRollout], n.Labels[v1alpha1.LabelPhase] = pick(r, []string{e.Rollout, "other"}), string(phase)
			if r.IntN(2) == 0 {
				n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
			}
			return n.Name + " " + string(phase)
		case 6:
			n.Spec.Unschedulable = true
			n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
			return n.Name + " cordoned by someone, on another driver"
		case 7:
			o.Nodes = slices.Delete(o.Nodes, i, i+1)
			return n.Name + " gone"
		case 8:
			n.Labels[v1alpha1.LabelGFDProduct] = "NVIDIA-L4"
			return n.Name + " reports another product"
		default:
			delete(n.Labels, "nvidia.com/gpu.present")
			n.Labels[v1alpha1.LabelGFDDriverFull] = "550.54.15"
			return n.Name + " not selected by the rollout, on another driver"
		}
	default:
		dr := o.Rollout
		if dr == nil {
			return "no DriverRollout to break"
		}
		cond := func(t, msg string) {
			dr.Status.Conditions = append(dr.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: msg})
		}
		notDone := func() {
			dr.Status.Phase, dr.Status.Conditions = v1alpha1.PhaseProgressing, nil
			dr.Status.Nodes.Done--
		}
		switch r.IntN(12) {
		case 0:
			o.Rollout = nil
			return "no DriverRollout"
		case 1:
			cond(v1alpha1.ConditionStalled, "canary failed")
			return "rollout stalled"
		case 2:
			cond(v1alpha1.ConditionCompletedWithFailures, "1 node rolled back")
			return "rollout completed with failures"
		case 3:
			dr.Status.BudgetUsed = dr.Spec.FailureBudget + 1
			return "rollout over its budget"
		case 4:
			notDone()
			return "rollout under way"
		case 5:
			dr.Spec.TargetVersion = "550.54.15"
			return "rollout at another target"
		case 6:
			dr.Generation++
			return "rollout spec not observed"
		case 7:
			notDone()
			dr.Spec.Paused = true
			return "rollout paused"
		case 8:
			notDone()
			cond(v1alpha1.ConditionWaitingForApproval, "the canary soaked")
			return "rollout waits for approval"
		case 9:
			notDone()
			cond(v1alpha1.ConditionOutsideWindow, "closed until Tuesday")
			return "rollout outside its window"
		case 10:
			dr.Spec.Abort = true
			dr.Status.Phase, dr.Status.Conditions = pick(r, []v1alpha1.RolloutPhase{v1alpha1.PhaseAborting, v1alpha1.PhaseAborted}), nil
			return "rollout aborted (" + string(dr.Status.Phase) + ")"
		default:
			notDone()
			cond(v1alpha1.ConditionOverlap, "nodes of another rollout")
			return "rollout overlaps another"
		}
	}
}

// breakApplication breaks one of the cluster's Argo CD Applications and
// says how.
func breakApplication(r *rand.Rand, e gate.Expected, o *Observed) string {
	name := pick(r, e.Applications)
	if o.Applications[name] == nil {
		return "application " + name + " already gone"
	}
	other := "fedcba9876543210fedcba9876543210fedcba98"
	switch r.IntN(8) {
	case 0:
		o.Applications[name] = nil
		return "application " + name + " missing"
	case 1:
		o.Applications[name] = argotest.Application(name, rev, argotest.Manual())
		return "application " + name + " not automated"
	case 2:
		o.Applications[name] = argotest.Application(name, other)
		return "application " + name + " synced at an old revision"
	case 3:
		o.Applications[name] = argotest.Application(name, rev, argotest.Sync("OutOfSync", rev), argotest.Operation("Running", "one or more objects failed to apply. Retrying attempt #1", rev, 1, true,
			[5]string{"NVIDIADriver", "", "h100-x", "SyncFailed", "the NVIDIADriver is invalid"}))
		return "application " + name + " sync failed, retried"
	case 4:
		o.Applications[name] = argotest.Application(name, rev, argotest.Operation("Running", "waiting for healthy state of nvidia.com/NVIDIADriver/h100-x", rev, 0, false))
		return "application " + name + " syncing"
	case 5:
		o.Applications[name] = argotest.Application(name, rev, argotest.Health("Degraded", ""),
			argotest.Resource("gpufleet.io", "DriverRollout", "", e.Rollout, "Synced", "Degraded", "Stalled: the canary failed", 2))
		return "application " + name + " degraded"
	case 6:
		o.Applications[name] = argotest.Application(name, rev, argotest.Sync("Unknown", rev), argotest.Condition("ComparisonError", "rpc error: repository not accessible"))
		return "application " + name + " cannot build its manifests"
	default:
		o.Applications[name] = argotest.Application(name, rev, argotest.Sync("OutOfSync", rev), argotest.Operation("Failed", "one or more synchronization tasks are not valid", rev, 0, true))
		return "application " + name + " out of sync after a failed sync"
	}
}
