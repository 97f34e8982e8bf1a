package planner_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

func plan(ro *v1alpha1.DriverRollout, nodes ...planner.Node) planner.Result {
	return planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
}

// wantBriefs fails unless the transitions of node are want, in order (each
// want a substring of the transition's brief).
func wantBriefs(t *testing.T, r planner.Result, node string, want ...string) {
	t.Helper()
	got := briefs(find(r, node))
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.Contains(got[i], want[i])
	}
	if !ok {
		t.Fatalf("%s: transitions\n  %s\nwant, in order, ones containing\n  %s", node, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestOFEDHoldsEveryNode: the first pass holds every selected node with the
// OFED skip label, whatever its phase, except one whose maintenance holds
// its OFED released; a node of another rollout is left alone.
func TestOFEDHoldsEveryNode(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Build()
	r := plan(ro,
		pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, false).Build(),
		pt.Node("gpu-01").RunsOFED(pt.OFEDPrevious, "", true).Build(),
		pt.Node("gpu-02").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, false).In(v1alpha1.NodeSoaking, ago(time.Minute)).Owner("r").Build(),
		pt.Node("gpu-03").OFEDNotReady(pt.OFEDTarget, false).In(v1alpha1.NodeInstalling, ago(time.Minute)).Owner("r").Build(),
		pt.Node("gpu-04").RunsOFED(pt.OFEDPrevious, "", false).Owner("other").Build(),
	)
	wantBriefs(t, r, "gpu-00", "Pending→Pending [hold-ofed] held with the OFED skip label") // gpu-03 holds the one slot
	wantBriefs(t, r, "gpu-02", "Soaking→Soaking [hold-ofed]")
	for _, n := range []string{"gpu-01", "gpu-03", "gpu-04"} {
		for _, tr := range find(r, n) {
			if tr.HoldOFED {
				t.Errorf("%s held: %s", n, brief(tr))
			}
		}
	}
}

// TestOFEDThenDriverInOneMaintenance walks one node through a release of
// both drivers: one cordon and drain; OFED released after the drain, the
// GPU driver label flipped only once OFED is through (and the hold put
// back with it); then the driver as without OFED.
func TestOFEDThenDriverInOneMaintenance(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Build()
	held := func(b *pt.NodeBuilder) planner.Node { return b.Owner("r").Build() }

	r := plan(ro, held(pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true)))
	wantBriefs(t, r, "gpu-00", "Pending→Draining [cordon]")

	r = plan(ro, held(pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true).In(v1alpha1.NodeDraining, ago(time.Minute)).Drained()))
	wantBriefs(t, r, "gpu-00", "Draining→Installing [release-ofed] drained in 1m; OFED hold released: the Network Operator replaces OFED "+pt.OFEDTarget+" first")
	if find(r, "gpu-00")[0].Driver != "" {
		t.Fatal("the driver label flipped with the OFED release")
	}

	// The Network Operator at work: the old pod still runs, then the new
	// one is not Ready yet. Nothing moves; the old GPU driver's pod
	// crash-looping meanwhile fails nothing.
	for _, n := range []planner.Node{
		held(pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStatePodRestartRequired, false).In(v1alpha1.NodeInstalling, ago(time.Minute))),
		held(pt.Node("gpu-00").OFEDNotReady(pt.OFEDTarget, false).In(v1alpha1.NodeInstalling, ago(time.Minute)).DriverFailed()),
		held(pt.Node("gpu-00").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateUncordonRequired, false).In(v1alpha1.NodeInstalling, ago(time.Minute))),
	} {
		if r := plan(ro, n); len(r.Transitions) != 0 {
			t.Fatalf("OFED under way (%s): %v", n.Labels[v1alpha1.LabelOFEDUpgradeState], briefs(r.Transitions))
		}
	}

	r = plan(ro, held(pt.Node("gpu-00").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, false).In(v1alpha1.NodeInstalling, ago(2*time.Minute))))
	wantBriefs(t, r, "gpu-00", "Installing→Installing [driver="+pt.Target+" hold-ofed] OFED "+pt.OFEDTarget+" Ready (upgrade-done) after 2m; installing driver")

	n := held(pt.Node("gpu-00").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).In(v1alpha1.NodeInstalling, ago(time.Minute)).Driver(true, pt.Target))
	r = plan(ro, n)
	wantBriefs(t, r, "gpu-00", "Installing→Validating [] driver pod Ready")
}

// TestOFEDOnlyRestartsTheDriverPod: a release of OFED alone (the GPU driver
// already the target) still takes each node through a maintenance, and
// with GPUDirect RDMA restarts the GPU driver pod after OFED, since its
// nvidia_peermem was loaded against the old OFED; without RDMA it does not.
func TestOFEDOnlyRestartsTheDriverPod(t *testing.T) {
	for _, peermem := range []bool{true, false} {
		ro := pt.Rollout("r").OFED(peermem).Versions(pt.Target, pt.Target).Build()
		onGPU := func() *pt.NodeBuilder { return pt.Node("gpu-00").Driver(true, pt.Target).Owner("r") }

		r := plan(ro, onGPU().RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true).Build())
		wantBriefs(t, r, "gpu-00", "Pending→Draining [cordon]")

		stale := onGPU().RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, false).In(v1alpha1.NodeInstalling, ago(time.Minute)).DriverStale()
		r = plan(ro, stale.Build())
		if peermem {
			wantBriefs(t, r, "gpu-00", "Installing→Installing [hold-ofed restart-driver] OFED "+pt.OFEDTarget+" Ready (upgrade-done) after 1m; restarting the driver")
			r = plan(ro, onGPU().RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).In(v1alpha1.NodeInstalling, ago(time.Second)).Build())
		}
		want := "Installing→Validating [hold-ofed]" // the hold goes back with the move
		if peermem {
			want = "Installing→Validating []" // it went back with the restart
		}
		wantBriefs(t, r, "gpu-00", want)
	}
}

// TestOFEDUnchangedIsNeverReleased: a release of the GPU driver alone (the
// OFED target its previous) never releases a node's OFED hold, whatever
// OFED the node runs.
func TestOFEDUnchangedIsNeverReleased(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).OFEDVersions(pt.OFEDTarget, pt.OFEDTarget).Build()
	on := func() *pt.NodeBuilder {
		return pt.Node("gpu-00").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).Owner("r")
	}
	steps := []planner.Node{
		on().Build(),
		on().In(v1alpha1.NodeDraining, ago(time.Minute)).Drained().Build(),
		on().In(v1alpha1.NodeInstalling, ago(time.Minute)).Driver(true, pt.Target).Build(),
	}
	want := []string{"Pending→Draining [cordon]", "Draining→Installing [driver=" + pt.Target + "]", "Installing→Validating []"}
	for i, n := range steps {
		r := plan(ro, n)
		wantBriefs(t, r, "gpu-00", want[i])
	}

	// The first release to name an OFED driver has no previous one to
	// move from (target and previous alike): a node running another
	// OFED, one an admin installed by hand, keeps it, and is settled or
	// moved for its GPU driver alone.
	r := plan(ro, pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, "", true).Driver(true, pt.Target).Owner("r").Build(),
		pt.Node("gpu-01").RunsOFED(pt.OFEDPrevious, "", true).Owner("r").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained().Build())
	wantBriefs(t, r, "gpu-00", "Pending→Done [driver="+pt.Target+"] already on driver "+pt.Target+": nothing to install")
	wantBriefs(t, r, "gpu-01", "Draining→Installing [driver="+pt.Target+"]")
}

// TestOFEDFailureRollsBackAndQuarantines: an OFED that never comes up fails
// the node (its GPU driver goes back, which it never left); its OFED cannot
// go back while the NicClusterPolicy names the new version, so the rollback
// times out into quarantine, saying why. A node whose new OFED works rolls
// its GPU driver back alone; one whose OFED was never replaced rolls back
// as without OFED.
func TestOFEDFailureRollsBackAndQuarantines(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Timeouts(time.Hour, 10*time.Minute, 10*time.Minute).Build()
	node := func() *pt.NodeBuilder { return pt.Node("gpu-00").Owner("r") }

	r := plan(ro, node().OFEDNotReady(pt.OFEDTarget, true).In(v1alpha1.NodeInstalling, ago(time.Minute)).Build())
	wantBriefs(t, r, "gpu-00", "Installing→RollingBack [failure driver="+pt.Previous+"] OFED "+pt.OFEDTarget+" failed to install")

	r = plan(ro, node().OFEDNotReady(pt.OFEDTarget, false).In(v1alpha1.NodeInstalling, ago(11*time.Minute)).Build())
	wantBriefs(t, r, "gpu-00", "Installing→RollingBack [failure driver="+pt.Previous+"] OFED "+pt.OFEDTarget+" not through within 10m (OFED pod "+pt.OFEDTarget)

	// Rolling back: the hold put back by someone is released again; then
	// it waits, and times out into quarantine.
	r = plan(ro, node().RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateFailed, true).OFEDNotReady(pt.OFEDTarget, true).In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RollingBack [release-ofed] OFED hold released: OFED goes back to "+pt.OFEDPrevious)
	r = plan(ro, node().OFEDNotReady(pt.OFEDTarget, true).In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	if len(r.Transitions) != 0 {
		t.Fatalf("rolling back, OFED not back: %v", briefs(r.Transitions))
	}
	r = plan(ro, node().OFEDNotReady(pt.OFEDTarget, true).In(v1alpha1.NodeRollingBack, ago(21*time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→Quarantined [quarantine] rollback to "+pt.Previous+" not done within 20m; OFED is not back on "+pt.OFEDPrevious)

	// The policy names the previous version again: the node's OFED is
	// back; its GPU driver pod, started before it, is restarted; then the
	// node is back in service, held again.
	r = plan(ro, node().RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateDone, false).DriverStale().In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RollingBack [restart-driver]")
	r = plan(ro, node().RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateDone, false).In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RolledBack [uncordon hold-ofed] back on "+pt.Previous)

	// The GPU driver failed on a node whose new OFED works: the GPU
	// driver goes back alone (its pod restarted where it was loaded
	// before that OFED), and the node keeps the new OFED, held again.
	r = plan(ro, node().RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).DriverStale().In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RollingBack [restart-driver] OFED "+pt.OFEDTarget+" kept Ready; restarting the driver")
	r = plan(ro, node().RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RolledBack [uncordon] back on "+pt.Previous)

	// Failed in its drain: its OFED was never released, and it rolls back
	// without waiting for anything of OFED.
	r = plan(ro, node().RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true).In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Build())
	wantBriefs(t, r, "gpu-00", "RollingBack→RolledBack [uncordon] back on "+pt.Previous)
}

// TestOFEDSettlesOnlyNodesOnBoth: a pending node on the target GPU driver is
// settled Done only when its OFED is the target too (and its driver pod not
// stale); otherwise it waits for a maintenance.
func TestOFEDSettlesOnlyNodesOnBoth(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Paused().Build()
	on := func(name string) *pt.NodeBuilder { return pt.Node(name).Driver(true, pt.Target).Owner("r") }
	r := plan(ro,
		on("gpu-00").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).Build(),
		on("gpu-01").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true).Build(),
		on("gpu-02").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).DriverStale().Build(),
	)
	wantBriefs(t, r, "gpu-00", "Pending→Done [driver="+pt.Target+"] already on driver "+pt.Target+" and OFED "+pt.OFEDTarget)
	for _, n := range []string{"gpu-01", "gpu-02"} {
		if got := find(r, n); len(got) != 0 {
			t.Errorf("%s settled or moved: %v", n, briefs(got))
		}
	}
}

// TestOFEDNeedsTheGPUFleetActuator: on the gpu-operator path spec.ofed is
// not acted on (the schema refuses it there); no OFED hold is written.
func TestOFEDNeedsTheGPUFleetActuator(t *testing.T) {
	ro := operatorRollout().OFED(true).Build()
	r := opPlan(ro, opNode("gpu-00", v1alpha1.OperatorStateUpgradeRequired, true).Build())
	if slices.ContainsFunc(r.Transitions, func(tr planner.Transition) bool { return tr.HoldOFED || tr.ReleaseOFED }) {
		t.Fatalf("OFED moves on the gpu-operator path: %v", briefs(r.Transitions))
	}
}

// TestOFEDTargetNotThroughHoldsTheDriverLabel: a drained node whose OFED
// pod runs the target already but is not through (a failed pod the
// Network Operator left, say after the rollout that released it was
// deleted) goes Installing without its GPU driver label flipped, and then
// fails in its OFED step; one whose target pod is still coming up waits.
func TestOFEDTargetNotThroughHoldsTheDriverLabel(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Build()
	node := func() *pt.NodeBuilder { return pt.Node("gpu-00").Owner("r") }
	for _, failed := range []bool{true, false} {
		r := plan(ro, node().OFEDNotReady(pt.OFEDTarget, failed).In(v1alpha1.NodeDraining, ago(time.Minute)).Drained().Build())
		wantBriefs(t, r, "gpu-00", "Draining→Draining [hold-ofed]", "Draining→Installing [] drained in 1m; OFED "+pt.OFEDTarget+" not through yet (OFED pod "+pt.OFEDTarget)
		r = plan(ro, node().OFEDNotReady(pt.OFEDTarget, failed).In(v1alpha1.NodeInstalling, ago(time.Minute)).Build())
		if failed {
			wantBriefs(t, r, "gpu-00", "Installing→RollingBack [failure driver="+pt.Previous+"] OFED "+pt.OFEDTarget+" failed to install")
		} else if len(r.Transitions) != 0 {
			t.Fatalf("OFED coming up: %v", briefs(r.Transitions))
		}
	}
}

// TestOFEDWaitsForTheNicClusterPolicy: while the NicClusterPolicy names
// another OFED version than the rollout's target (Git's two objects
// applied one after the other, or a revert under way), no node starts, and
// the status says why; once it names the target, the canary starts.
func TestOFEDWaitsForTheNicClusterPolicy(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Build()
	n := pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, true).Owner("r").Build()
	r := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{n}, OFEDPolicy: pt.OFEDPrevious}, now)
	if len(r.Transitions) != 0 {
		t.Fatalf("started under another NicClusterPolicy: %v", briefs(r.Transitions))
	}
	if msg := readyMessage(r.Status); !strings.Contains(msg, "the NicClusterPolicy names OFED "+pt.OFEDPrevious+", not the rollout's "+pt.OFEDTarget) {
		t.Errorf("status %q does not say it waits for the NicClusterPolicy", msg)
	}
	for _, policy := range []string{pt.OFEDTarget, ""} {
		r = planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{n}, OFEDPolicy: policy}, now)
		wantBriefs(t, r, "gpu-00", "Pending→Draining [cordon]")
	}
}

// TestOFEDAbortTakesOFEDBack: under abort, with the NicClusterPolicy
// naming the previous OFED again (render writes it so), a node Done on the
// new OFED rolls back both drivers: its hold is released so the Network
// Operator restores the previous OFED; while the policy still names the
// target, a node whose new OFED works keeps it.
func TestOFEDAbortTakesOFEDBack(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Abort().Build()
	node := func() *pt.NodeBuilder {
		return pt.Node("gpu-00").Owner("r").RunsOFED(pt.OFEDTarget, v1alpha1.OperatorStateDone, true).In(v1alpha1.NodeRollingBack, ago(time.Minute))
	}
	for _, policy := range []string{pt.OFEDPrevious, ""} {
		r := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{node().Build()}, OFEDPolicy: policy}, now)
		wantBriefs(t, r, "gpu-00", "RollingBack→RollingBack [release-ofed] OFED hold released: OFED goes back to "+pt.OFEDPrevious)
	}
	r := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{node().Build()}, OFEDPolicy: pt.OFEDTarget}, now)
	wantBriefs(t, r, "gpu-00", "RollingBack→RolledBack [uncordon] back on "+pt.Previous)
}

// TestOFEDNodeSelectors: in a cluster whose pools do not all have managed
// NICs, a node spec.ofed.nodeSelectors does not match has no OFED: it is
// not held, and its maintenance is the GPU driver's alone, whatever it
// (does not) run of OFED.
func TestOFEDNodeSelectors(t *testing.T) {
	ro := pt.Rollout("r").OFED(true).Build()
	ro.Spec.OFED.NodeSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"feature.node.kubernetes.io/pci-15b3.present": "true"}}}
	nic := func(b *pt.NodeBuilder) *pt.NodeBuilder {
		n := b.Build()
		n.Labels["feature.node.kubernetes.io/pci-15b3.present"] = "true"
		return pt.NodeFrom(n)
	}
	r := plan(ro,
		nic(pt.Node("gpu-00").RunsOFED(pt.OFEDPrevious, v1alpha1.OperatorStateUpgradeRequired, false)).Owner("r").Build(),
		pt.Node("gpu-01").Owner("r").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained().Build(),
	)
	wantBriefs(t, r, "gpu-00", "Pending→Pending [hold-ofed]")
	wantBriefs(t, r, "gpu-01", "Draining→Installing [driver="+pt.Target+"] drained in 1m; installing driver")
	if bad := plan(pt.Rollout("r").OFED(true).Build(), pt.Node("gpu-01").Owner("r").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained().Build()); len(find(bad, "gpu-01")) == 0 || find(bad, "gpu-01")[0].Driver != "" {
		t.Errorf("without node selectors, a node without OFED still waits for it: %v", briefs(find(bad, "gpu-01")))
	}
}
