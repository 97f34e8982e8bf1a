package sim_test

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

// ofedNodes are n nodes on the previous GPU driver (or driver) and the
// previous OFED.
func ofedNodes(n int, driver string) []planner.Node {
	nodes := pt.Nodes("gpu", n)
	for i := range nodes {
		pt.RunsDriver(&nodes[i], driver)
	}
	sim.RunOFED(nodes, pt.OFEDPrevious)
	return nodes
}

// runOFED runs cfg under the checker, and fails at any violation.
func runOFED(t *testing.T, cfg sim.Config) *sim.Result {
	t.Helper()
	check := simcheck.NewChecker()
	cfg.Record = true
	res, err := sim.RunHooked(sim.Hooked{Config: cfg, Hooks: sim.Hooks{Observe: check.Step}})
	if err != nil {
		t.Fatal(err)
	}
	finalAll(check, res)
	if v := check.Violations(); len(v) > 0 {
		t.Fatalf("invariants broken: %v\n%s", v, res.TranscriptText())
	}
	return res
}

// inOrder fails unless the transcript has lines containing want, in order.
func inOrder(t *testing.T, transcript string, want ...string) {
	t.Helper()
	rest := transcript
	for _, w := range want {
		k := strings.Index(rest, w)
		if k < 0 {
			t.Fatalf("transcript lacks %q after the lines before it:\n%s", w, transcript)
		}
		rest = rest[k+len(w):]
	}
}

// TestOFEDOneNodeWalks: one node of a release of both drivers is held,
// drained once, released, has its OFED replaced by the Network Operator
// (left cordoned), then its GPU driver flipped, and ends Done on both,
// uncordoned, drained once.
func TestOFEDOneNodeWalks(t *testing.T) {
	res := runOFED(t, sim.Config{Rollout: pt.Rollout("r").OFED(true).Build(), Nodes: ofedNodes(1, pt.Previous), Start: monday, Profile: steady()})
	inOrder(t, res.TranscriptText(),
		"Pending → Pending: held with the OFED skip label",
		"Pending → Draining",
		"Draining → Installing: drained in 5m; OFED hold released",
		"network-operator  gpu-00 pod-restart-required",
		"network-operator  gpu-00 upgrade-done",
		"Installing → Installing: OFED "+pt.OFEDTarget+" Ready (upgrade-done) after 5m; installing driver "+pt.Target,
		"Installing → Validating",
		"Soaking → Done")
	n := res.Nodes[0]
	if n.Phase != v1alpha1.NodeDone || !v1alpha1.OFEDMatches(n.OFEDVersion, pt.OFEDTarget) || !n.OFEDReady || n.DriverStale || !n.DriverReady || n.Unschedulable {
		t.Errorf("node at the end: %+v", n)
	}
	if n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" {
		t.Errorf("the OFED hold is not back: %v", n.Labels)
	}
	if d := res.Drains(); d["gpu-00"] != 1 {
		t.Errorf("drains %v, want gpu-00 drained once", d)
	}
}

// TestOFEDBadVersionStopsAtTheCanary: an OFED version that never comes up
// fails the canary in its OFED step, before its GPU driver label moved;
// its OFED cannot go back while the NicClusterPolicy names the bad
// version, so it is quarantined; the budget spent, no other node is
// started, and every other node keeps its OFED, held.
func TestOFEDBadVersionStopsAtTheCanary(t *testing.T) {
	prof := steady()
	prof.BadOFED = pt.OFEDTarget
	ro := pt.Rollout("r").OFED(true).Canary(1).Approved().Budget(0).Build()
	res := runOFED(t, sim.Config{Rollout: ro, Nodes: ofedNodes(4, pt.Previous), Start: monday, Profile: prof})
	inOrder(t, res.TranscriptText(),
		"Draining → Installing: drained in 5m; OFED hold released",
		"network-operator  gpu-00 upgrade-failed",
		"Installing → RollingBack: OFED "+pt.OFEDTarget+" failed to install",
		"RollingBack → Quarantined: rollback to "+pt.Previous+" not done within")
	for _, n := range res.Nodes {
		if n.Name == "gpu-00" {
			if n.Phase != v1alpha1.NodeQuarantined || n.Labels[v1alpha1.LabelDriver] != pt.Previous {
				t.Errorf("canary: %s, driver label %s", n.Phase, n.Labels[v1alpha1.LabelDriver])
			}
			continue
		}
		if n.Phase != "" && n.Phase != v1alpha1.NodePending || !v1alpha1.OFEDMatches(n.OFEDVersion, pt.OFEDPrevious) || n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" {
			t.Errorf("%s touched: %s, OFED %s, skip %q", n.Name, n.Phase, n.OFEDVersion, n.Labels[v1alpha1.LabelOFEDUpgradeSkip])
		}
	}
	if d := res.Drains(); len(d) != 1 {
		t.Errorf("drains %v, want the canary's only", d)
	}
}

// TestOFEDOnlyReleaseRestartsTheDriverPod: a release of OFED alone (the
// GPU driver already the target) still drains each node once, and with
// GPUDirect RDMA restarts its GPU driver pod after its OFED (whose
// nvidia_peermem was loaded against the old one, so it is not Ready
// before); without RDMA the pod stays.
func TestOFEDOnlyReleaseRestartsTheDriverPod(t *testing.T) {
	for _, peermem := range []bool{true, false} {
		ro := pt.Rollout("r").OFED(peermem).Versions(pt.Target, pt.Target).Parallel(2).MaxUnavailable(2).Build()
		res := runOFED(t, sim.Config{Rollout: ro, Nodes: ofedNodes(3, pt.Target), Start: monday, Profile: steady()})
		text := res.TranscriptText()
		restarts := strings.Count(text, "restarting the driver "+pt.Target+" pod so nvidia_peermem loads against it")
		if want := map[bool]int{true: 3, false: 0}[peermem]; restarts != want {
			t.Errorf("peermem=%t: %d driver pods restarted, want %d:\n%s", peermem, restarts, want, text)
		}
		if strings.Contains(text, "installing driver") {
			t.Errorf("peermem=%t: a driver label flipped in an OFED-only release:\n%s", peermem, text)
		}
		for _, n := range res.Nodes {
			if n.Phase != v1alpha1.NodeDone || !v1alpha1.OFEDMatches(n.OFEDVersion, pt.OFEDTarget) || n.DriverStale != !peermem || !n.DriverReady {
				t.Errorf("peermem=%t: %s ended %s, OFED %s, stale=%t, driver Ready=%t", peermem, n.Name, n.Phase, n.OFEDVersion, n.DriverStale, n.DriverReady)
			}
		}
		for node, d := range res.Drains() {
			if d != 1 {
				t.Errorf("peermem=%t: %s drained %d times", peermem, node, d)
			}
		}
		if len(res.Drains()) != 3 {
			t.Errorf("peermem=%t: drains %v, want every node once", peermem, res.Drains())
		}
	}
}
