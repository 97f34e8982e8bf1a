package planner_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// opNode is a node of the h100 pool as the gpu-operator path sees it: its
// operator state, held or not.
func opNode(name, state string, held bool) *pt.NodeBuilder {
	kv := []string{v1alpha1.LabelPool, pt.Pool}
	if state != "" {
		kv = append(kv, v1alpha1.LabelOperatorUpgradeState, state)
	}
	if held {
		kv = append(kv, v1alpha1.LabelOperatorUpgradeSkip, "true")
	}
	return pt.Node(name).Labels(kv...)
}

func operatorRollout() *pt.RolloutBuilder {
	return pt.Rollout("r").Canary(1).Parallel(2).MaxUnavailable(2).Soak(time.Hour)
}

func opPlan(ro *v1alpha1.DriverRollout, nodes ...planner.Node) planner.Result {
	ro.Spec.Actuator = v1alpha1.ActuatorGPUOperator
	return planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
}

func find(r planner.Result, node string) []planner.Transition {
	var out []planner.Transition
	for _, t := range r.Transitions {
		if t.Node == node {
			out = append(out, t)
		}
	}
	return out
}

// TestOperatorHoldsThenReleasesTheCanaryAlone: every unheld node is held
// first; only the canary is released, and only once the operator marked it
// upgrade-required; nothing is cordoned by gpufleet.
func TestOperatorHoldsThenReleasesTheCanaryAlone(t *testing.T) {
	r := opPlan(operatorRollout().Build(),
		opNode("gpu-00", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, false).Build(),
		opNode("gpu-02", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
	)
	got := find(r, "gpu-01")
	if len(got) != 1 || !got[0].Hold || got[0].To != v1alpha1.NodePending {
		t.Fatalf("gpu-01: %v, want one hold", briefs(got))
	}
	c := find(r, "gpu-00")
	if len(c) != 1 || !c[0].Release || c[0].To != v1alpha1.NodeInstalling || c[0].Cordon {
		t.Fatalf("canary gpu-00: %v, want released without a cordon", briefs(c))
	}
	if got := find(r, "gpu-02"); len(got) != 0 {
		t.Errorf("gpu-02 moved before the canary passed: %v", briefs(got))
	}
}

// TestOperatorWaitsForUpgradeRequired: a node the operator has not marked
// is not released, and the status says why.
func TestOperatorWaitsForUpgradeRequired(t *testing.T) {
	r := opPlan(operatorRollout().Build(), opNode("gpu-00", v1alpha1.OperatorStateDone, true).Build())
	if len(r.Transitions) != 0 {
		t.Fatalf("transitions %v, want none", briefs(r.Transitions))
	}
	if msg := readyMessage(r.Status); !strings.Contains(msg, "has not marked") {
		t.Errorf("status %q does not say it waits for the operator", msg)
	}
}

// TestOperatorReleasesACordonedNodeWithTheCordonKept: a node someone else
// cordoned is released with KeepCordon, and the admin's cordon recorded.
func TestOperatorReleasesACordonedNodeWithTheCordonKept(t *testing.T) {
	ro := operatorRollout().Approved().Build()
	ro.Status.Canary.Nodes = []string{"gpu-00"}
	r := opPlan(ro,
		opNode("gpu-00", v1alpha1.OperatorStateDone, true).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Uncordoned().Driver(true, pt.Target).Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Cordoned().Build(),
	)
	got := find(r, "gpu-01")
	if len(got) != 1 || !got[0].Release || !got[0].KeepCordon || !got[0].RecordAdminCordon || got[0].Cordon || got[0].Uncordon {
		t.Fatalf("gpu-01: %+v, want released with the cordon kept and recorded", got)
	}
}

// TestOperatorFailuresQuarantineWithoutRollback: upgrade-failed, a
// crash-looping pod and an XID in the soak each quarantine the node by
// label and taint only, count against the budget and hold it again.
func TestOperatorFailuresQuarantineWithoutRollback(t *testing.T) {
	ro := operatorRollout().Approved().Budget(5).Build()
	ro.Status.Canary.Nodes = []string{"gpu-00"}
	r := opPlan(ro,
		opNode("gpu-00", v1alpha1.OperatorStateDone, true).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Uncordoned().Driver(true, pt.Target).Build(),
		opNode("gpu-01", v1alpha1.OperatorStateFailed, false).Owner("r").In(v1alpha1.NodeInstalling, ago(time.Minute)).Build(),
		opNode("gpu-02", v1alpha1.OperatorStatePodRestartRequired, false).Owner("r").In(v1alpha1.NodeInstalling, ago(time.Minute)).DriverFailed().Build(),
		opNode("gpu-03", v1alpha1.OperatorStateDone, true).Owner("r").In(v1alpha1.NodeSoaking, ago(10*time.Minute)).Uncordoned().Driver(true, pt.Target).Signal(ago(time.Minute), "XidError").Build(),
	)
	for _, n := range []string{"gpu-01", "gpu-02", "gpu-03"} {
		got := find(r, n)
		if len(got) != 1 {
			t.Errorf("%s: %v, want one transition", n, briefs(got))
			continue
		}
		tr := got[0]
		if tr.To != v1alpha1.NodeQuarantined || !tr.Quarantine || !tr.Failure || tr.Cordon || tr.Driver != "" {
			t.Errorf("%s: %s, want quarantined by label and taint, failed, no cordon, no driver change", n, brief(tr))
		}
		if held := n == "gpu-03"; tr.Hold == held {
			t.Errorf("%s: hold %t; a node already held needs none, the others do", n, tr.Hold)
		}
	}
}

// TestOperatorSoakDoneIsNotUncordoned: a node soaked clean ends Done with
// its driver label on the target and is never uncordoned by gpufleet, even
// when cordoned (the operator kept an admin's cordon).
func TestOperatorSoakDoneIsNotUncordoned(t *testing.T) {
	ro := operatorRollout().Approved().Build()
	ro.Status.Canary.Nodes = []string{"gpu-00"}
	r := opPlan(ro, opNode("gpu-00", v1alpha1.OperatorStateDone, true).Owner("r").In(v1alpha1.NodeSoaking, ago(2*time.Hour)).AdminCordoned().Driver(true, pt.Target).Build())
	got := find(r, "gpu-00")
	if len(got) != 1 || got[0].To != v1alpha1.NodeDone || got[0].Uncordon || got[0].Driver != pt.Target {
		t.Fatalf("gpu-00: %v, want Done, driver label on the target, no uncordon", briefs(got))
	}
}

// TestOperatorFailedNodesTakeTheOperatorsSlots: the operator counts
// upgrade-failed nodes as upgrades in progress, so with parallelNodes 1 a
// quarantined, failed node keeps the next node from being released.
func TestOperatorFailedNodesTakeTheOperatorsSlots(t *testing.T) {
	ro := operatorRollout().Approved().Parallel(1).Budget(3).Build()
	ro.Status.Canary.Nodes = []string{"gpu-00"}
	r := opPlan(ro,
		opNode("gpu-00", v1alpha1.OperatorStateFailed, true).Owner("r").In(v1alpha1.NodeQuarantined, ago(time.Hour)).Failed().Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
	)
	if len(r.Transitions) != 0 {
		t.Fatalf("transitions %v, want none", briefs(r.Transitions))
	}
	// Past a canary that passed, the failed node's slot is what holds the
	// rest back, and the status says so, with the way out.
	ro.Status.Canary.Nodes = []string{"gpu-02"}
	r = opPlan(ro,
		opNode("gpu-00", v1alpha1.OperatorStateFailed, true).Owner("r").In(v1alpha1.NodeQuarantined, ago(time.Hour)).Failed().Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
		opNode("gpu-02", v1alpha1.OperatorStateDone, true).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Uncordoned().Driver(true, pt.Target).Build(),
	)
	if len(r.Transitions) != 0 {
		t.Fatalf("past the canary: transitions %v, want none", briefs(r.Transitions))
	}
	var msgs []string
	for _, c := range r.Status.Conditions {
		msgs = append(msgs, c.Message)
	}
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, "1 node in upgrade-failed") || !strings.Contains(all, "raise parallel-nodes") {
		t.Errorf("conditions %q: want the failed node's slot and the way out said", msgs)
	}
}

// TestOperatorAbortReleasesForThePoolsRollback: under abort, nodes that
// reached the new driver are released for the operator to put the pool's
// previous driver back, within the slots; pending nodes stay held.
func TestOperatorAbortReleasesForThePoolsRollback(t *testing.T) {
	ro := operatorRollout().Abort().Parallel(1).Build()
	r := opPlan(ro,
		opNode("gpu-00", v1alpha1.OperatorStateUpgradeRequired, true).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Uncordoned().Driver(true, pt.Target).Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Uncordoned().Driver(true, pt.Target).Build(),
		opNode("gpu-02", v1alpha1.OperatorStateDone, true).Build(),
	)
	if got := find(r, "gpu-00"); len(got) != 1 || got[0].To != v1alpha1.NodeRollingBack || !got[0].Release {
		t.Errorf("gpu-00: %v, want released to roll back", briefs(got))
	}
	if got := find(r, "gpu-01"); len(got) != 0 {
		t.Errorf("gpu-01: %v, want it to wait for the slot", briefs(got))
	}
	if got := find(r, "gpu-02"); len(got) != 0 {
		t.Errorf("gpu-02 (pending, held): %v", briefs(got))
	}
}

func readyMessage(st v1alpha1.DriverRolloutStatus) string {
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Message
		}
	}
	return ""
}

// TestOperatorRefusesATaintItsDaemonSetWouldNotTolerate: on the operator's
// path a quarantine taint other than gpufleet's own (which render makes the
// driver DaemonSet tolerate) would wedge the operator's upgrade controller
// once a node carries it, so the rollout stalls before it moves anything;
// gpufleet's own key, an effect that keeps no DaemonSet pod off, and the
// gpufleet actuator are all fine.
func TestOperatorRefusesATaintItsDaemonSetWouldNotTolerate(t *testing.T) {
	nodes := []planner.Node{
		opNode("gpu-00", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
		opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
	}
	withTaint := func(key string, effect corev1.TaintEffect) *v1alpha1.DriverRollout {
		ro := operatorRollout().Build()
		ro.Spec.Quarantine.Taint = &corev1.Taint{Key: key, Value: "true", Effect: effect}
		return ro
	}
	r := opPlan(withTaint("example.com/broken", corev1.TaintEffectNoSchedule), nodes...)
	if len(r.Transitions) != 0 || r.Status.Phase != v1alpha1.PhaseStalled || !strings.Contains(stalledMessage(r), "example.com/broken:NoSchedule") {
		t.Errorf("custom NoSchedule taint: phase %s, %v, %q; want stalled, nothing moved, the taint named", r.Status.Phase, briefs(r.Transitions), stalledMessage(r))
	}
	if r := opPlan(withTaint("example.com/broken", corev1.TaintEffectNoExecute), nodes...); r.Status.Phase != v1alpha1.PhaseStalled {
		t.Errorf("custom NoExecute taint: phase %s, want stalled", r.Status.Phase)
	}
	for name, ro := range map[string]*v1alpha1.DriverRollout{
		"gpufleet's key":   withTaint(v1alpha1.TaintQuarantined, corev1.TaintEffectNoExecute),
		"PreferNoSchedule": withTaint("example.com/soft", corev1.TaintEffectPreferNoSchedule),
	} {
		if r := opPlan(ro, nodes...); len(find(r, "gpu-00")) == 0 {
			t.Errorf("%s: the canary was not released: phase %s %q", name, r.Status.Phase, stalledMessage(r))
		}
	}
	ro := withTaint("example.com/broken", corev1.TaintEffectNoSchedule)
	if r := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now); r.Status.Phase == v1alpha1.PhaseStalled {
		t.Errorf("gpufleet actuator with a custom taint: stalled %q; its own actuator tolerates any", stalledMessage(r))
	}
}

// stalledMessage is the Stalled condition's message, if any.
func stalledMessage(r planner.Result) string {
	for _, c := range r.Status.Conditions {
		if c.Type == v1alpha1.ConditionStalled && c.Status == "True" {
			return c.Message
		}
	}
	return ""
}

// TestOperatorCanaryAlreadyUpgradedSoaksInPlace: a canary node the operator
// upgraded before gpufleet's hold reached it (or that someone upgraded by
// hand) is up to date, so the operator never marks it upgrade-required:
// it soaks where it is, held, instead of the rollout waiting for ever; once
// held (a pass that holds it writes only that), and only when a canary may
// start (not while paused).
func TestOperatorCanaryAlreadyUpgradedSoaksInPlace(t *testing.T) {
	nodes := func(held bool) []planner.Node {
		return []planner.Node{
			opNode("gpu-00", v1alpha1.OperatorStateDone, held).Driver(true, pt.Target).Build(),
			opNode("gpu-01", v1alpha1.OperatorStateUpgradeRequired, true).Build(),
		}
	}
	ro := func(b *pt.RolloutBuilder) *v1alpha1.DriverRollout {
		r := b.Build()
		r.Status.Canary.Nodes = []string{"gpu-00"} // chosen before the operator upgraded it
		return r
	}
	r := opPlan(ro(operatorRollout()), nodes(false)...)
	if c := find(r, "gpu-00"); len(c) != 1 || c[0].To != v1alpha1.NodePending || !c[0].Hold {
		t.Fatalf("unheld canary gpu-00: %v, want its hold alone", briefs(c))
	}
	r = opPlan(ro(operatorRollout()), nodes(true)...)
	c := find(r, "gpu-00")
	if len(c) != 1 || c[0].To != v1alpha1.NodeSoaking || c[0].Release || c[0].Hold {
		t.Fatalf("held canary gpu-00: %v, want it soaking in place, neither released nor held again", briefs(c))
	}
	if got := find(r, "gpu-01"); len(got) != 0 {
		t.Errorf("gpu-01 moved beside the canary: %v", briefs(got))
	}
	if r := opPlan(ro(operatorRollout().Paused()), nodes(true)...); len(find(r, "gpu-00")) != 0 {
		t.Errorf("paused: canary %v, want it left alone", briefs(find(r, "gpu-00")))
	}
}
