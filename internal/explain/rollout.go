package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// controllerLogs is the command that shows what the lifecycle controller
// does, as config/ installs it.
const controllerLogs = "kubectl -n gpufleet-system logs deployment/gpufleet-controller"

// rollout judges the cluster's DriverRollout as a whole: there, at the
// release's driver, observed, and neither stopped nor waiting for someone.
func (w *walker) rollout() {
	dr := w.o.Rollout
	id := gate.RolloutCheck(w.e.Rollout)
	l := Link{Step: StepRollout, Object: objectOfKind(gate.KindDriverRollout, w.e.Rollout), Expected: "Completed, driver " + w.a.Driver}
	check, ok := w.passed(id)
	l.Observed = check.Observed
	describe := "kubectl describe driverrollout " + w.e.Rollout
	reconcile := w.applyCommand("lifecycle")
	cond := func(t string) *Condition {
		if dr == nil {
			return nil
		}
		c := apimeta.FindStatusCondition(dr.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			return nil
		}
		return &Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	switch {
	case ok:
		l.State = OK
	case dr == nil:
		l.State, l.Message, l.Next = BrokenState, "the DriverRollout does not exist: the lifecycle step writes it", reconcile
		w.blockedBy(&l, "lifecycle")
	case dr.Spec.Abort:
		// An aborted rollout rolls its nodes back to the stable driver
		// (the release the cluster now runs); it never completes at it,
		// so its nodes are judged, not its completion (as promote does).
		l.Expected = "Aborted, every node back on driver " + w.a.Driver
		switch {
		case cond(v1alpha1.ConditionStalled) != nil:
			l.Condition = cond(v1alpha1.ConditionStalled)
			l.State, l.Message, l.Next = BrokenState, "the aborted rollout stopped rolling back: "+l.Condition.Message, describe
		case dr.Status.Phase == v1alpha1.PhaseAborted:
			l.State, l.Message = OK, "aborted: its nodes are rolled back"
		default:
			l.State, l.Message, l.Next = InProgress, fmt.Sprintf("the aborted rollout is rolling its nodes back (%s)", cmp.Or(string(dr.Status.Phase), "starting")), "kubectl get driverrollout "+w.e.Rollout+" -w"
		}
	case dr.Spec.TargetVersion != w.a.Driver:
		l.State, l.Message, l.Next = BrokenState, check.Message+": Flux has not applied the release's lifecycle step", reconcile
		w.blockedBy(&l, "lifecycle")
	case dr.Status.ObservedGeneration != dr.Generation:
		l.State, l.Message, l.Next = InProgress, fmt.Sprintf("the controller has not observed generation %d yet (it observed %d): is gpufleet-controller running?", dr.Generation, dr.Status.ObservedGeneration), controllerLogs
	case cond(v1alpha1.ConditionCompletedWithFailures) != nil:
		l.Condition = cond(v1alpha1.ConditionCompletedWithFailures)
		l.State, l.Message, l.Next = BrokenState, "every node is through, but some were rolled back or quarantined: "+l.Condition.Message, describe
	case cond(v1alpha1.ConditionStalled) != nil:
		l.Condition = cond(v1alpha1.ConditionStalled)
		l.State, l.Message, l.Next = BrokenState, "the rollout stopped and will not go on by itself: "+l.Condition.Message+" (`gpufleet abort` rolls the release back)", describe
	case dr.Spec.Paused || cond(v1alpha1.ConditionPaused) != nil:
		l.Condition = cond(v1alpha1.ConditionPaused)
		l.State, l.Message, l.Next = BrokenState, "the rollout is paused: no node starts", describe
		if w.f.Promotion.Paused {
			l.Message, l.Next = "the rollout is paused in the fleet file: no node starts", "gpufleet resume"
		}
	case cond(v1alpha1.ConditionWaitingForApproval) != nil:
		l = w.approval(l, dr, cond(v1alpha1.ConditionWaitingForApproval))
	case cond(v1alpha1.ConditionOutsideWindow) != nil:
		l.Condition = cond(v1alpha1.ConditionOutsideWindow)
		l.State, l.Message, l.Next = InProgress, "the rollout waits for its maintenance window: "+l.Condition.Message, describe
	case cond(v1alpha1.ConditionOverlap) != nil:
		l.Condition = cond(v1alpha1.ConditionOverlap)
		l.State, l.Message, l.Next = InProgress, "some nodes belong to another rollout, and wait for it: "+l.Condition.Message, "kubectl get driverrollouts"
	default:
		l.State, l.Message, l.Next = InProgress, fmt.Sprintf("the rollout is %s: %d of %d nodes done", cmp.Or(string(dr.Status.Phase), "starting"), dr.Status.Nodes.Done, dr.Status.Total), "kubectl get driverrollout "+w.e.Rollout+" -w"
		if gate.BudgetExceeded(dr) {
			l.State, l.Message, l.Next = BrokenState, check.Message, describe
		}
	}
	// The approval link (an approval is what the rollout waits for)
	// answers for the rollout's check as well.
	l.Checks = []gate.CheckID{id}
	w.add(l)
}

// approval explains a rollout that waits for the approval of its canary:
// the exact name to approve when the promotion waits for it, or why the
// approval the fleet file holds has not reached the cluster.
func (w *walker) approval(l Link, dr *v1alpha1.DriverRollout, c *Condition) Link {
	l.Step, l.State, l.Condition = StepApproval, BrokenState, c
	r := w.f.Promotion.Rollout
	release := dr.Name
	if r != nil {
		release = r.Release
	}
	name := fleet.ClusterApproval(release, w.e.Cluster)
	if w.f.Approved(name) {
		l.Message = fmt.Sprintf("the canary soaked and waits for approval; the fleet file approves it (%s), but the cluster's DriverRollout does not carry it yet: is the approval commit pushed?", name)
		l.Next = w.applyCommand("lifecycle")
		return l
	}
	for _, wt := range promote.Waits(w.f) {
		if wt.Cluster == w.e.Cluster && wt.Approval != "" {
			l.Message = "the canary soaked and waits for approval: " + c.Message
			l.Next = "gpufleet approve " + wt.Approval
			return l
		}
	}
	l.Message = "the canary waits for approval, which the promotion cannot give now: " + c.Message
	l.Next = "gpufleet status"
	return l
}

// nodes judges each GPU node of the rollout: a node that is not Ready,
// reports a GPU error, failed, or is held by someone else's cordon is
// broken; one in flight or waiting its turn is on its way. Each node's link
// answers for the checks of its pool the node makes fail; a check over the
// nodes that no node's link answers for (a pool with no node at all, too
// many quarantined, a node the rollout does not select) gets a link of its
// own.
func (w *walker) nodes() {
	covered := map[gate.CheckID]bool{}
	for _, n := range w.rolloutNodes() {
		st := nodeStateOf(n)
		driver := w.o.Driver(n)
		info := Node{
			Name: n.Name, Phase: string(st.Phase.OrPending()), Rollout: st.Rollout, Driver: driver.Version,
			Ready: planner.NodeReady(&n), Cordoned: n.Spec.Unschedulable, Failed: st.Failed,
		}
		info.OnTarget = driver.Runs(w.a.Driver)
		info.AdminCordoned = n.Spec.Unschedulable && (st.AdminCordoned || !st.Phase.HoldsCordon())
		if !st.Since.IsZero() {
			info.Since = st.Since.UTC().Format(time.RFC3339)
		}
		w.a.Nodes = append(w.a.Nodes, info)
		l, ok := w.node(n, info, st)
		if ok {
			continue
		}
		l.Checks = w.nodeFails(n)
		for _, id := range l.Checks {
			covered[id] = true
		}
		w.add(l)
	}
	for _, c := range w.list {
		if !nodeCheck(c.Name.Kind) || c.Status == gate.Pass || covered[c.Name] {
			continue
		}
		w.add(Link{Step: StepNode, Object: objectOfKind(gate.KindNode, c.Name.String()), State: BrokenState, Expected: c.Expected, Observed: c.Observed, Message: c.Message,
			Next: "kubectl get nodes -L " + v1alpha1.LabelGFDProduct + "," + v1alpha1.LabelGFDDriverFull, Checks: []gate.CheckID{c.Name}})
	}
}

// nodeCheck says a check of kind k is judged over the nodes, and answered
// for by nodes' links.
func nodeCheck(k gate.CheckKind) bool {
	switch k {
	case gate.CheckPoolDriver, gate.CheckPoolDriverLabel, gate.CheckPoolHeld, gate.CheckPoolReady, gate.CheckPoolGPUErrors, gate.CheckQuarantined:
		return true
	}
	return false
}

// nodeFails are the checks over the nodes that the gate fails and node n
// makes fail, by the gate's own rules.
func (w *walker) nodeFails(n corev1.Node) []gate.CheckID {
	var out []gate.CheckID
	add := func(id gate.CheckID, fails bool) {
		if fails && w.failed(id) {
			out = append(out, id)
		}
	}
	if p := w.e.PoolOf(n); p != nil && w.e.Release != nil {
		add(gate.PoolDriverCheck(p.Name), !w.o.Driver(n).Runs(w.e.Release.Driver))
		add(gate.PoolDriverLabelCheck(p.Name), gate.DriverUnlabelled(w.e, n))
		add(gate.PoolHeldCheck(p.Name), !gate.Held(w.e, n))
		add(gate.PoolReadyCheck(p.Name), !planner.NodeReady(&n))
		add(gate.PoolGPUErrorsCheck(p.Name), len(gate.GPUErrors(w.e, n)) > 0)
	}
	add(gate.QuarantinedCheck(), n.Labels[v1alpha1.LabelQuarantined] == "true")
	return out
}

// node judges one node; ok when nothing is to be said about it.
func (w *walker) node(n corev1.Node, info Node, st v1alpha1.NodeState) (Link, bool) {
	l := Link{Step: StepNode, Object: objectOf("v1", "Node", "", n.Name), Expected: "Ready, on driver " + w.a.Driver, Observed: fmt.Sprintf("%s, driver %s", info.Phase, cmp.Or(info.Driver, "none"))}
	describe := "kubectl describe node " + n.Name
	if !info.Ready {
		l.State, l.Next = BrokenState, describe
		l.Condition = nodeCondition(n, corev1.NodeReady)
		l.Message = "the node is not Ready"
		if l.Condition != nil && l.Condition.Message != "" {
			l.Message += ": " + l.Condition.Message
		}
		return l, false
	}
	for _, c := range n.Status.Conditions {
		if c.Status == corev1.ConditionTrue && slices.Contains(w.e.SignalConditions, string(c.Type)) {
			l.State, l.Next, l.Condition = BrokenState, describe, &Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
			l.Message = fmt.Sprintf("the node reports a GPU error (%s): %s", c.Type, c.Message)
			return l, false
		}
	}
	phase := st.Phase.OrPending()
	switch {
	case phase == v1alpha1.NodeQuarantined || phase == v1alpha1.NodeRolledBack || phase == v1alpha1.NodeRollingBack:
		l.State, l.Next = BrokenState, describe
		l.Message = fmt.Sprintf("the node failed in rollout %s and is %s", cmp.Or(st.Rollout, w.e.Rollout), phase)
		return l, false
	case gate.DriverUnlabelled(w.e, n) && n.Labels[v1alpha1.LabelDriver] == "":
		// The gate's driver-label check, said for this node: the
		// controller labels a node without one (planner's joining rule).
		l.State, l.Next = InProgress, controllerLogs
		l.Message = fmt.Sprintf("the node runs %s but has no %s label, so no NVIDIADriver of the release selects it yet: gpufleet-controller labels it with the driver it runs at its next pass. Is it running, and is the lifecycle step applied?", w.a.Driver, v1alpha1.LabelDriver)
		return l, false
	case gate.DriverUnlabelled(w.e, n):
		// Labelled for another driver: the controller leaves a label it
		// finds, so a person sets it.
		l.State = BrokenState
		l.Next = fmt.Sprintf("kubectl label node %s %s=%s --overwrite", n.Name, v1alpha1.LabelDriver, w.a.Driver)
		l.Message = fmt.Sprintf("the node runs %s but its %s label is %s, so no NVIDIADriver of the release selects it and the operator may take its driver away (a label set by hand, or from a time on the gpu-operator actuator)", w.a.Driver, v1alpha1.LabelDriver, n.Labels[v1alpha1.LabelDriver])
		return l, false
	case !gate.Held(w.e, n):
		// The gate's held check, said for this node.
		l.State, l.Next = BrokenState, controllerLogs
		l.Message = fmt.Sprintf("the node is not under gpufleet yet: it carries no %s=true and its rollout has not released it, so the GPU Operator may upgrade it outside the rollout's policy. gpufleet-controller holds it at its next pass: is it running, and is the lifecycle step applied?", v1alpha1.LabelOperatorUpgradeSkip)
		return l, false
	case info.OnTarget:
		return l, true
	case info.AdminCordoned:
		l.State, l.Next = BrokenState, "kubectl uncordon "+n.Name
		l.Message = "the node is held by a cordon someone other than gpufleet set: the rollout never starts a node cordoned by someone else, nor lifts that cordon; uncordon it once whoever cordoned it is done"
		return l, false
	case st.Rollout != "" && st.Rollout != w.e.Rollout:
		l.State, l.Next = InProgress, "kubectl get driverrollout "+st.Rollout
		l.Message = "the node belongs to rollout " + st.Rollout + ", and waits for it"
		return l, false
	case phase.InFlight():
		l.State, l.Next = InProgress, "kubectl get driverrollout "+w.e.Rollout+" -w"
		l.Message = "the node is " + string(phase)
		if !st.Since.IsZero() {
			l.Message += " since " + st.Since.UTC().Format(time.RFC3339)
		}
		if wait := planner.DRAWaitOf(phase, n.Labels, w.a.Driver); wait != "" {
			// A DRA node's swap in its steps (the planner's dra.go).
			l.Message += ", and waits for " + wait
		}
		return l, false
	default:
		l.State, l.Next = InProgress, "kubectl get driverrollout "+w.e.Rollout+" -w"
		l.Message = "the node waits its turn (Pending)"
		return l, false
	}
}

// rolloutNodes are the nodes the DriverRollout selects, or without one
// the nodes of the cluster's pools, by name.
func (w *walker) rolloutNodes() []corev1.Node {
	var sel labels.Selector
	if dr := w.o.Rollout; dr != nil {
		if s, err := metav1.LabelSelectorAsSelector(&dr.Spec.NodeSelector); err == nil && !s.Empty() {
			sel = s
		}
	}
	var out []corev1.Node
	for _, n := range w.o.Nodes {
		switch {
		case sel != nil && sel.Matches(labels.Set(n.Labels)):
		case sel == nil && w.e.PoolOf(n) != nil:
		default:
			continue
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func nodeStateOf(n corev1.Node) v1alpha1.NodeState {
	return v1alpha1.NodeStateOf(n.Labels, n.Annotations)
}

func nodeCondition(n corev1.Node, t corev1.NodeConditionType) *Condition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return &Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}
