package gate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Observed is what the gate read from one cluster. A nil entry of a map
// means the object does not exist.
type Observed struct {
	Kustomizations map[string]*unstructured.Unstructured
	Applications   map[string]*unstructured.Unstructured
	HelmReleases   map[string]*unstructured.Unstructured
	Deployments    map[string]*unstructured.Unstructured
	// Controller is gpufleet-controller's Deployment (read where
	// Expected.ControllerImage is set).
	Controller    *unstructured.Unstructured
	ClusterPolicy *unstructured.Unstructured
	NVIDIADrivers map[string]*unstructured.Unstructured
	Nodes         []corev1.Node
	// DRA is what the ResourceSlices of NVIDIA's GPU DRA driver
	// (v1alpha1.DRADriverGPU) say of each node, by node name: empty on a cluster
	// that has none or does not serve resource.k8s.io/v1.
	DRA     map[string]*dra.Node
	Rollout *v1alpha1.DriverRollout
}

// Evaluate judges what was observed on a cluster against what is expected.
// It is pure: every verdict comes from its arguments.
func Evaluate(e Expected, o Observed) []Check {
	var checks []Check
	add := func(id CheckID, ok bool, expected, observed, msg string) {
		st := Pass
		if !ok {
			st = Fail
		}
		checks = append(checks, Check{Cluster: e.Cluster, Name: id, Status: st, Expected: expected, Observed: observed, Message: msg})
	}
	for _, name := range e.Kustomizations {
		ok, observed, msg := kustomizationReady(o.Kustomizations[name], e.Revision)
		add(KustomizationCheck(name), ok, "Ready at "+shortRev(e.Revision), observed, msg)
	}
	for _, name := range e.Applications {
		ok, observed, msg := applicationReady(o.Applications[name], e.Revision)
		add(ApplicationCheck(name), ok, "Synced at "+shortRev(e.Revision)+", Healthy", observed, msg)
	}
	for _, key := range slices.Sorted(maps.Keys(e.HelmReleases)) {
		want := e.HelmReleases[key]
		ok, observed, msg := helmReleaseReady(o.HelmReleases[key], want)
		add(HelmReleaseCheck(key), ok, "Ready at chart "+want, observed, msg)
	}
	for _, key := range slices.Sorted(maps.Keys(e.OperatorDeployments)) {
		want := e.OperatorDeployments[key]
		ok, observed, msg := operatorDeploymentReady(o.Deployments[key], want)
		add(OperatorDeploymentCheck(key), ok, "Available, chart "+want, observed, msg)
	}
	if e.ControllerImage != "" {
		ok, observed, msg := controllerReady(o.Controller, e.ControllerImage)
		add(ControllerCheck(), ok, "Available, "+e.ControllerImage, observed, msg)
	}
	ok, observed, msg := stateReady(o.ClusterPolicy, "ClusterPolicy")
	add(ClusterPolicyCheck(), ok, "ready", observed, msg)
	ok, observed, msg = driverManagement(e, o.ClusterPolicy)
	add(DriverManagementCheck(), ok, e.DriverManagement, observed, msg)
	for _, name := range e.NVIDIADrivers {
		ok, observed, msg := stateReady(o.NVIDIADrivers[name], "NVIDIADriver "+name)
		add(NVIDIADriverCheck(name), ok, "ready", observed, msg)
	}
	checks = append(checks, nodeChecks(e, o)...)
	ok, observed, msg = rolloutComplete(o.Rollout, e)
	add(RolloutCheck(e.Rollout), ok, "Completed, budget held", observed, msg)
	return checks
}

func kustomizationReady(u *unstructured.Unstructured, revision string) (bool, string, string) {
	if u == nil {
		return false, "missing", "the Kustomization does not exist: has Flux applied the cluster's folder?"
	}
	if suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspended {
		return false, "suspended", "the Kustomization is suspended: `flux resume kustomization " + u.GetName() + "`"
	}
	applied, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	res, err := status.Compute(u)
	if err != nil {
		return false, "unreadable status", err.Error()
	}
	observed := fmt.Sprintf("%s at %s", res.Status, shortRev(applied))
	if res.Status != status.CurrentStatus {
		return false, observed, cmp.Or(res.Message, "not Ready")
	}
	if revision != "" && !strings.Contains(applied, revision) {
		return false, observed, "Flux has not applied the expected revision yet"
	}
	return true, observed, ""
}

func helmReleaseReady(u *unstructured.Unstructured, version string) (bool, string, string) {
	if u == nil {
		return false, "missing", "the HelmRelease does not exist"
	}
	chart := deployedChartVersion(u)
	res, err := status.Compute(u)
	if err != nil {
		return false, "unreadable status", err.Error()
	}
	observed := fmt.Sprintf("%s at chart %s", res.Status, cmp.Or(chart, "none"))
	if res.Status != status.CurrentStatus {
		return false, observed, cmp.Or(res.Message, "not Ready")
	}
	if chart != version {
		return false, observed, fmt.Sprintf("chart %s is deployed, %s expected", chart, version)
	}
	return true, observed, ""
}

// operatorDeploymentReady judges an operator's Deployment in the manifests
// chart mode: it exists, carries the chart label of the expected version,
// and kstatus finds it Current (the new ReplicaSet's pods Available).
func operatorDeploymentReady(u *unstructured.Unstructured, chart string) (bool, string, string) {
	if u == nil {
		return false, "missing", "the operator's Deployment does not exist: has the operators step been applied?"
	}
	got := normalChartLabel(u.GetLabels()[labelHelmChart])
	res, err := status.Compute(u)
	if err != nil {
		return false, "unreadable status", err.Error()
	}
	observed := fmt.Sprintf("%s, chart %s", res.Status, cmp.Or(got, "unlabelled"))
	if got != chart {
		return false, observed, fmt.Sprintf("chart %s is applied, %s expected", cmp.Or(got, "(no "+labelHelmChart+" label)"), chart)
	}
	if res.Status != status.CurrentStatus {
		return false, observed, cmp.Or(res.Message, "not Available")
	}
	return true, observed, ""
}

// controllerReady judges gpufleet-controller's Deployment: it exists, its
// controller container runs image, and kstatus finds it Current (every
// replica updated and Available, none of the old version left). Until then
// a DriverRollout may still be driven by the version it replaces.
func controllerReady(u *unstructured.Unstructured, image string) (bool, string, string) {
	if u == nil {
		return false, "missing", "gpufleet-controller's Deployment does not exist: has the operators step been applied?"
	}
	got := ""
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if c, ok := c.(map[string]any); ok && c["name"] == config.Container {
			got, _ = c["image"].(string)
		}
	}
	res, err := status.Compute(u)
	if err != nil {
		return false, "unreadable status", err.Error()
	}
	observed := fmt.Sprintf("%s, %s", res.Status, cmp.Or(got, "no "+config.Container+" container"))
	if got != image {
		return false, observed, fmt.Sprintf("the Deployment runs %s, %s expected", cmp.Or(got, "no "+config.Container+" container"), image)
	}
	if res.Status != status.CurrentStatus {
		return false, observed, cmp.Or(res.Message, "not Available")
	}
	return true, observed, ""
}

// deployedChartVersion is the chart version of the HelmRelease's latest
// release (status.history[0]), or the last attempted revision.
func deployedChartVersion(u *unstructured.Unstructured) string {
	if hist, ok, _ := unstructured.NestedSlice(u.Object, "status", "history"); ok && len(hist) > 0 {
		if h, ok := hist[0].(map[string]any); ok {
			if v, ok := h["chartVersion"].(string); ok {
				return v
			}
		}
	}
	v, _, _ := unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
	return v
}

// stateReady judges GPU Operator objects, which report status.state.
func stateReady(u *unstructured.Unstructured, what string) (bool, string, string) {
	if u == nil {
		return false, "missing", what + " does not exist"
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	if state != "ready" {
		return false, cmp.Or(state, "no state"), what + " is not ready"
	}
	return true, state, ""
}

func nodeChecks(e Expected, o Observed) []Check {
	var checks []Check
	quarantined := 0
	for _, pool := range e.Pools {
		var members []corev1.Node
		for _, n := range o.Nodes {
			if e.InPool(n, pool) {
				members = append(members, n)
			}
		}
		var wrongDriver, disagree, unselected, unlabelled, notHeld, notReady, signals []string
		for _, n := range members {
			if !Held(e, n) {
				notHeld = append(notHeld, n.Name)
			}
			if n.Labels[v1alpha1.LabelQuarantined] == "true" {
				quarantined++
			}
			switch d := o.Driver(n); {
			case d.Conflict != "":
				disagree = append(disagree, n.Name+": "+d.Conflict)
			case !d.Runs(e.Release.Driver):
				wrongDriver = append(wrongDriver, fmt.Sprintf("%s=%s", n.Name, d))
			case DriverUnlabelled(e, n):
				unselected = append(unselected, fmt.Sprintf("%s=%s", n.Name, cmp.Or(n.Labels[v1alpha1.LabelDriver], "none")))
				if n.Labels[v1alpha1.LabelDriver] == "" {
					unlabelled = append(unlabelled, n.Name)
				}
			}
			if !planner.NodeReady(&n) {
				notReady = append(notReady, n.Name)
			}
			signals = append(signals, GPUErrors(e, n)...)
		}
		c := Check{Cluster: e.Cluster, Name: PoolDriverCheck(pool.Name), Status: Pass, Expected: fmt.Sprintf("%d nodes on driver %s", pool.Nodes, e.Release.Driver), Observed: fmt.Sprintf("%d of %d on %s", len(members)-len(wrongDriver)-len(disagree), len(members), e.Release.Driver)}
		if len(members) == 0 {
			c.Status, c.Message = Fail, "no node of the pool found (label "+v1alpha1.LabelGFDProduct+"="+pool.Product+")"
		}
		if len(wrongDriver)+len(disagree) > 0 {
			c.Status, c.Message = Fail, driverMessage(wrongDriver, disagree)
		}
		checks = append(checks, c)
		if e.DriverLabel {
			sel := Check{Cluster: e.Cluster, Name: PoolDriverLabelCheck(pool.Name), Status: Pass, Expected: fmt.Sprintf("%s=%s on every node of the pool", v1alpha1.LabelDriver, e.Release.Driver), Observed: fmt.Sprintf("%d of %d", len(members)-len(unselected), len(members))}
			if len(unselected) > 0 {
				sel.Status, sel.Message = Fail, driverLabelMessage(e, unselected, unlabelled)
			}
			checks = append(checks, sel)
		}
		if e.Actuator == v1alpha1.ActuatorGPUOperator {
			held := Check{Cluster: e.Cluster, Name: PoolHeldCheck(pool.Name), Status: Pass, Expected: fmt.Sprintf("every node held (%s=true) or released by its rollout", v1alpha1.LabelOperatorUpgradeSkip), Observed: fmt.Sprintf("%d of %d", len(members)-len(notHeld), len(members))}
			if len(notHeld) > 0 {
				held.Status, held.Message = Fail, fmt.Sprintf("not under gpufleet yet, so the GPU Operator may upgrade them outside the rollout's policy: %s. gpufleet-controller holds a node with %s=true at its next pass: is it running, and is the lifecycle step applied?", strings.Join(notHeld, ", "), v1alpha1.LabelOperatorUpgradeSkip)
			}
			checks = append(checks, held)
		}
		ready := Check{Cluster: e.Cluster, Name: PoolReadyCheck(pool.Name), Status: Pass, Expected: "all Ready", Observed: fmt.Sprintf("%d of %d Ready", len(members)-len(notReady), len(members))}
		if len(notReady) > 0 {
			ready.Status, ready.Message = Fail, "not Ready: "+strings.Join(notReady, ", ")
		}
		checks = append(checks, ready)
		sig := Check{Cluster: e.Cluster, Name: PoolGPUErrorsCheck(pool.Name), Status: Pass, Expected: "no " + strings.Join(e.SignalConditions, "/"), Observed: fmt.Sprintf("%d active", len(signals))}
		if len(signals) > 0 {
			sig.Status, sig.Message = Fail, "active GPU error signals: "+strings.Join(signals, ", ")
		}
		checks = append(checks, sig)
	}
	q := Check{Cluster: e.Cluster, Name: QuarantinedCheck(), Status: Pass, Expected: fmt.Sprintf("at most %d", e.MaxQuarantined), Observed: fmt.Sprint(quarantined)}
	if quarantined > e.MaxQuarantined {
		q.Status, q.Message = Fail, "more quarantined nodes than the failure budget allows"
	}
	return append(checks, q)
}

// driverMessage says what the driver check found: the nodes on another
// driver, and the nodes whose label and DRA ResourceSlices disagree on
// which driver they run.
func driverMessage(wrong, disagree []string) string {
	var parts []string
	if len(wrong) > 0 {
		parts = append(parts, "on another driver: "+strings.Join(wrong, ", "))
	}
	if len(disagree) > 0 {
		parts = append(parts, fmt.Sprintf("the reports of the driver a node runs disagree, so which one runs is not known: %s. "+
			"A DRA kubelet plugin that ran on across a driver swap publishes the old driver until it restarts (delete its pod on the node); "+
			"GPU Feature Discovery relabels a node within a minute of a swap", strings.Join(disagree, "; ")))
	}
	return strings.Join(parts, "; ")
}

// InPool says node n is one of pool's: it carries the pool's GPU product
// and, where pools share a product, the pool's label. The gate's node
// checks and explain's nodes ask it alike.
func (e Expected) InPool(n corev1.Node, pool *fleet.Pool) bool {
	return n.Labels[v1alpha1.LabelGFDProduct] == pool.Product &&
		(!e.SharedProduct[pool.Name] || n.Labels[v1alpha1.LabelPool] == pool.Name)
}

// PoolOf is the pool of e that node n is in; nil when none.
func (e Expected) PoolOf(n corev1.Node) *fleet.Pool {
	for _, p := range e.Pools {
		if e.InPool(n, p) {
			return p
		}
	}
	return nil
}

// GPUErrors are the GPU error conditions (e.SignalConditions) True on n,
// each "node: condition", as the gpu-errors check names them.
func GPUErrors(e Expected, n corev1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		if c.Status == corev1.ConditionTrue && slices.Contains(e.SignalConditions, string(c.Type)) {
			out = append(out, fmt.Sprintf("%s: %s", n.Name, c.Type))
		}
	}
	return out
}

// driverLabelMessage says what the driver-label check found: each node
// running the release's driver that no NVIDIADriver of it selects, and who
// fixes it. A node without the label is gpufleet-controller's to label (it
// labels a node that joins with the driver it runs, at its next pass, see
// planner's joining rule); a node labelled for another driver is not (the
// controller only labels a node that has none), so a person sets it.
func driverLabelMessage(e Expected, unselected, unlabelled []string) string {
	msg := fmt.Sprintf("running %s but selected by no NVIDIADriver of the release, so the operator may take the driver away: %s", e.Release.Driver, strings.Join(unselected, ", "))
	var fixes []string
	if len(unlabelled) > 0 {
		fixes = append(fixes, fmt.Sprintf("gpufleet-controller labels a node without %s at its next pass (%s): is it running, and is the lifecycle step applied?", v1alpha1.LabelDriver, strings.Join(unlabelled, ", ")))
	}
	if len(unlabelled) < len(unselected) {
		fixes = append(fixes, fmt.Sprintf("a node labelled for another driver keeps it: label it %s=%s", v1alpha1.LabelDriver, e.Release.Driver))
	}
	return msg + ". " + strings.Join(fixes, "; ")
}

// Held reports whether node n is under gpufleet on the gpu-operator
// actuator: it carries the operator's skip label, or its rollout released
// it (planner.OperatorReleased). A node neither is one the operator may
// upgrade whenever its driver DaemonSet changes, outside the rollout's
// canary, windows and maxUnavailable. Always true on gpufleet's actuator.
func Held(e Expected, n corev1.Node) bool {
	return e.Actuator != v1alpha1.ActuatorGPUOperator ||
		n.Labels[v1alpha1.LabelOperatorUpgradeSkip] == "true" ||
		planner.OperatorReleased(v1alpha1.NodeStateOf(n.Labels, n.Annotations).Phase)
}

// DriverManagementOf is who runs the driver by the ClusterPolicy's
// spec.driver.useNvidiaDriverCRD: NVIDIADriver objects when true, the
// ClusterPolicy's own DaemonSet when false or absent (the chart's
// default); "" without a ClusterPolicy.
func DriverManagementOf(cp *unstructured.Unstructured) string {
	if cp == nil {
		return ""
	}
	if on, _, _ := unstructured.NestedBool(cp.Object, "spec", "driver", "useNvidiaDriverCRD"); on {
		return fleet.DriverManagementNVIDIADriver
	}
	return fleet.DriverManagementClusterPolicy
}

// driverManagement judges whether the ClusterPolicy manages the driver as
// the fleet file says. The two ways round differ: NVIDIADrivers rendered
// for a cluster whose ClusterPolicy still runs the driver is what, applied
// below GPU Operator v26.7.0, deletes every driver pod at once.
func driverManagement(e Expected, cp *unstructured.Unstructured) (bool, string, string) {
	got := DriverManagementOf(cp)
	table := fmt.Sprintf("[clusters.%s.gpu-operator]", e.Cluster)
	switch {
	case got == "":
		return false, "no ClusterPolicy", "the ClusterPolicy does not exist: who runs the driver cannot be read"
	case got == e.DriverManagement:
		return true, got, ""
	case got == fleet.DriverManagementClusterPolicy:
		return false, got, fmt.Sprintf("the fleet file renders NVIDIADriver objects for this cluster, but its ClusterPolicy still runs the driver itself (nvidia-driver-daemonset, spec.driver.useNvidiaDriverCRD false): on a GPU Operator below v26.7.0 applying that deletes every driver pod at once. Set driver-management = %q in %s (gpufleet init writes it)", fleet.DriverManagementClusterPolicy, table)
	default:
		return false, got, fmt.Sprintf("the fleet file keeps the driver with the ClusterPolicy (driver-management = %q) and renders no NVIDIADriver, but the ClusterPolicy hands the driver to NVIDIADriver objects (spec.driver.useNvidiaDriverCRD true): set driver-management = %q in %s, or remove the key", fleet.DriverManagementClusterPolicy, fleet.DriverManagementNVIDIADriver, table)
	}
}

// DriverUnlabelled reports whether n runs e's driver while no NVIDIADriver
// of the release selects it: on gpufleet's actuator (e.DriverLabel) its
// gpufleet.io/driver label is not the release's driver. A node on another
// driver is not (the driver check tells it, whatever its label), nor one
// the controller is moving or has quarantined: it carries the label the
// controller set (a rollback flips the label before the driver changes).
// The gate's driver-label check and explain's node link both ask this.
func DriverUnlabelled(e Expected, n corev1.Node) bool {
	return e.DriverLabel && e.Release != nil &&
		planner.DriverMatches(n.Labels[v1alpha1.LabelGFDDriverFull], e.Release.Driver) &&
		n.Labels[v1alpha1.LabelDriver] != e.Release.Driver &&
		!v1alpha1.NodeStateOf(n.Labels, n.Annotations).Phase.HoldsCordon()
}

func rolloutComplete(dr *v1alpha1.DriverRollout, e Expected) (bool, string, string) {
	if dr == nil {
		return false, "missing", "the DriverRollout does not exist: has the lifecycle step been applied?"
	}
	observed := fmt.Sprintf("%s, %d/%d done, budget used %d of %d", cmp.Or(string(dr.Status.Phase), "no phase"), dr.Status.Nodes.Done, dr.Status.Total, dr.Status.BudgetUsed, dr.Spec.FailureBudget)
	if dr.Spec.TargetVersion != e.Release.Driver {
		return false, observed, fmt.Sprintf("the DriverRollout targets %s, the release's driver is %s", dr.Spec.TargetVersion, e.Release.Driver)
	}
	if dr.Status.ObservedGeneration != dr.Generation {
		return false, observed, "the controller has not observed the latest spec yet"
	}
	// Finished, but with nodes rolled back or quarantined: they are not on
	// the release's driver, whatever the budget allowed. Said before the
	// Stalled that goes with it, so the verdict names what happened.
	if c := condition(dr, v1alpha1.ConditionCompletedWithFailures); c != nil && c.Status == "True" {
		return false, observed, "CompletedWithFailures: " + c.Message
	}
	if c := condition(dr, v1alpha1.ConditionStalled); c != nil && c.Status == "True" {
		return false, observed, "Stalled: " + c.Message
	}
	if BudgetExceeded(dr) {
		return false, observed, "the failure budget is exceeded"
	}
	if c := condition(dr, v1alpha1.ConditionCompleted); c == nil || c.Status != "True" || dr.Status.Phase != v1alpha1.PhaseCompleted {
		return false, observed, "the rollout has not completed"
	}
	return true, observed, ""
}

func condition(dr *v1alpha1.DriverRollout, t string) *struct{ Status, Message string } {
	for _, c := range dr.Status.Conditions {
		if c.Type == t {
			return &struct{ Status, Message string }{string(c.Status), c.Message}
		}
	}
	return nil
}

func shortRev(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return cmp.Or(rev, "none")
}

// BudgetExceeded says more of the rollout's nodes failed than its failure
// budget allows: the rollout check fails on it however far the rollout got
// (explain tells it from a rollout merely under way by this).
func BudgetExceeded(dr *v1alpha1.DriverRollout) bool {
	return dr.Status.BudgetUsed > dr.Spec.FailureBudget
}
