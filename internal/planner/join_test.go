package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestJoin: a node without a driver label is labelled at once, whatever the
// windows, freezes, pause or slots say, with the driver it runs, or with
// none, with the one the cluster should run now (the rule of "Nodes that
// join" in docs/spec/v1alpha1/driverrollout.md); never
// a node of another rollout, a quarantined one, or one out of service; an
// admin's cordon is recorded and kept.
func TestJoin(t *testing.T) {
	const target, previous = pt.Target, pt.Previous
	fresh := func(name string) *pt.NodeBuilder { return pt.Node(name).Unlabelled().Driver(false, "") }
	done := func(name string) *pt.NodeBuilder {
		return pt.Node(name).Owner("r").In(v1alpha1.NodeDone, ago(time.Hour)).Driver(true, target)
	}
	// A rollout whose canary (gpu-00) passed.
	passed := func() *pt.RolloutBuilder { return pt.Rollout("r").CanaryNodes("gpu-00") }
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    []string
	}{
		{
			name:    "after the rollout completed, outside the window: the target at once",
			rollout: passed().Approved().Window("22:00", "23:00", "UTC"),
			nodes:   []*pt.NodeBuilder{done("gpu-00"), done("gpu-01"), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + " (no driver yet; the canary proved " + target + ")"},
		},
		{
			name:    "before the canary is approved: the previous driver",
			rollout: passed(),
			nodes:   []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01"), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (no driver yet; the canary passed but is not approved)"},
		},
		{
			name:    "while the canary is in flight: the previous driver, and the canary goes on",
			rollout: pt.Rollout("r").Canary(1).Approved(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(time.Minute)), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (no driver yet; the canary has not proven " + target + " yet)"},
		},
		{
			name:    "auto-approved canary: the target",
			rollout: passed().AutoApprove().Paused(),
			nodes:   []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01"), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + " (no driver yet; the canary proved " + target + ")"},
		},
		{
			name:    "no canary, inside a freeze: the target",
			rollout: pt.Rollout("r").Freeze(ago(time.Hour), now.Add(time.Hour), "launch"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00"), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + " (no driver yet; the rollout has no canary)"},
		},
		{
			name:    "aborted: the previous driver",
			rollout: passed().Approved().Abort(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("r").In(v1alpha1.NodeRolledBack, ago(time.Hour)), fresh("gpu-09")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (no driver yet; the rollout to " + target + " is aborted)"},
		},
		{
			name:    "the budget spent: the previous driver",
			rollout: passed().Approved().Budget(0),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01").Owner("r").In(v1alpha1.NodeRolledBack, ago(time.Hour)).Failed(),
				fresh("gpu-09")},
			want: []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (no driver yet; the rollout to " + target + " spent its failure budget)"},
		},
		{
			name:    "running the previous driver: labelled with it, and started later like any node",
			rollout: pt.Rollout("r").Parallel(2).MaxUnavailable(2).Window("22:00", "23:00", "UTC"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Unlabelled()},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (it runs " + previous + ")"},
		},
		{
			name:    "running another driver: labelled with what it runs",
			rollout: pt.Rollout("r").Paused(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Unlabelled().Driver(true, "550.54.15")},
			want:    []string{"gpu-09 Pending→Pending [join driver=550.54.15] joined without a driver label: labelled 550.54.15 (it runs 550.54.15, which the rollout moves to " + target + " under its policy)"},
		},
		{
			name:    "running the target: settled Done, labelled in the same write",
			rollout: pt.Rollout("r").Paused(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Unlabelled().Driver(true, target)},
			want:    []string{"gpu-09 Pending→Done [driver=" + target + "] already on driver " + target + ": nothing to install"},
		},
		{
			name:    "a precompiled branch: the build a node runs is labelled as its branch",
			rollout: pt.Rollout("r").Paused().Versions("580", "570"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Unlabelled().Driver(true, "570.172.08")},
			want:    []string{"gpu-09 Pending→Pending [join driver=570] joined without a driver label: labelled 570 (it runs 570.172.08 (branch 570))"},
		},
		{
			name:    "cordoned by an admin: labelled, the cordon recorded and kept",
			rollout: pt.Rollout("r").Paused(),
			nodes:   []*pt.NodeBuilder{fresh("gpu-09").Cordoned()},
			want:    []string{"gpu-09 Pending→Pending [admin-cordon join driver=" + target + "] joined without a driver label: labelled " + target + " (no driver yet; the rollout has no canary)"},
		},
		{
			name:    "NotReady: labelled all the same",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{fresh("gpu-09").NotReady()},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + " (no driver yet; the rollout has no canary)"},
		},
		{
			name:    "never a node another rollout owns, a quarantined one, or one out of service",
			rollout: pt.Rollout("r").OutOfService("remediation", "true"),
			nodes: []*pt.NodeBuilder{
				fresh("gpu-07").Owner("other"),
				fresh("gpu-08").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelQuarantined, "true"),
				fresh("gpu-09").Labels(v1alpha1.LabelPool, pt.Pool, "remediation", "true"),
			},
			want: []string{},
		},
		{
			name:    "not on the gpu-operator actuator: the operator installs a new node's driver",
			rollout: pt.Rollout("r").Actuator(v1alpha1.ActuatorGPUOperator).Paused(),
			nodes:   []*pt.NodeBuilder{fresh("gpu-09").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelOperatorUpgradeSkip, "true")},
			want:    []string{},
		},
		{
			name:    "joined in this pass: not started in the same pass, though a slot is free",
			rollout: pt.Rollout("r").Parallel(2).MaxUnavailable(2),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Unlabelled()},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + previous + "] joined without a driver label: labelled " + previous + " (it runs " + previous + ")"},
		},
		{
			name:    "joined on the target and installing: left alone while its install may take",
			rollout: pt.Rollout("r").Parallel(2).MaxUnavailable(2),
			nodes:   []*pt.NodeBuilder{fresh("gpu-09").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, target).Owner("r").In(v1alpha1.NodePending, ago(10*time.Minute))},
			want:    []string{},
		},
		{
			name:    "joined on the target and not up after the install and validate timeouts: started like any node",
			rollout: pt.Rollout("r").Parallel(2).MaxUnavailable(2).Timeouts(time.Hour, 20*time.Minute, 10*time.Minute),
			nodes:   []*pt.NodeBuilder{fresh("gpu-09").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, target).Owner("r").In(v1alpha1.NodePending, ago(31*time.Minute))},
			want:    []string{"gpu-09 Pending→Draining [cordon] node started: cordoning and draining for driver " + target},
		},
		{
			name:    "joined on the target and reporting it: Done",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-09").Driver(true, target).Owner("r").In(v1alpha1.NodePending, ago(3*time.Minute))},
			want:    []string{"gpu-09 Pending→Done [driver=" + target + "] already on driver " + target + ": nothing to install"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planOnce(tt.rollout, tt.nodes)
			if diff := cmp.Diff(tt.want, briefs(got.Transitions)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJoinWakesForTheInstallDeadline: a node joined on the target asks to be
// looked at again when its install and validate timeouts have passed, so a
// driver that never comes up is noticed without another event.
func TestJoinWakesForTheInstallDeadline(t *testing.T) {
	ro := pt.Rollout("r").Timeouts(time.Hour, 20*time.Minute, 10*time.Minute).Build()
	n := pt.Node("gpu-09").Unlabelled().Driver(false, "").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Target).
		Owner("r").In(v1alpha1.NodePending, ago(10*time.Minute)).Build()
	got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{n}}, now)
	if want := now.Add(20 * time.Minute); !got.NextCheck.Equal(want) {
		t.Errorf("next check %s, want %s (30m after the join)", got.NextCheck, want)
	}
}

// TestCanaryNodeLeaves: a canary node that leaves the cluster before the
// canary is through is replaced, and one that passed keeps the canary
// passed (approval still needed): the rollout never goes on without one.
func TestCanaryNodeLeaves(t *testing.T) {
	t.Run("in flight: replaced by the next node that needs the driver", func(t *testing.T) {
		ro := pt.Rollout("r").Canary(1).Approved().Parallel(3).MaxUnavailable(3).Build()
		ro.Status.Canary = v1alpha1.CanaryStatus{Result: v1alpha1.CanaryInProgress, Nodes: []string{"gpu-00"}}
		nodes := []planner.Node{pt.Node("gpu-01").Build(), pt.Node("gpu-02").Build()}
		got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
		want := []string{"gpu-01 Pending→Draining [cordon] canary node started: cordoning and draining for driver " + pt.Target}
		if diff := cmp.Diff(want, briefs(got.Transitions)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"gpu-01"}, got.Status.Canary.Nodes); diff != "" {
			t.Errorf("canary nodes (-want +got):\n%s", diff)
		}
	})
	t.Run("passed, not approved: still waiting for approval", func(t *testing.T) {
		ro := pt.Rollout("r").Canary(1).Parallel(3).MaxUnavailable(3).Build()
		ro.Status.Canary = v1alpha1.CanaryStatus{Result: v1alpha1.CanaryPassed, Nodes: []string{"gpu-00"}}
		nodes := []planner.Node{pt.Node("gpu-01").Build(), pt.Node("gpu-02").Build()}
		got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
		if len(got.Transitions) != 0 || got.Status.Phase != v1alpha1.PhaseWaitingForApproval || got.Status.Canary.Result != v1alpha1.CanaryPassed {
			t.Errorf("got %v, phase %s, canary %s; want nothing started, WaitingForApproval, Passed", briefs(got.Transitions), got.Status.Phase, got.Status.Canary.Result)
		}
	})
	t.Run("named by the spec and absent: another node is the canary", func(t *testing.T) {
		ro := pt.Rollout("r").CanaryNodes("gpu-00").Approved().Parallel(3).MaxUnavailable(3).Build()
		nodes := []planner.Node{pt.Node("gpu-01").Build(), pt.Node("gpu-02").Build()}
		got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
		want := []string{"gpu-01 Pending→Draining [cordon] canary node started: cordoning and draining for driver " + pt.Target}
		if diff := cmp.Diff(want, briefs(got.Transitions)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
	})
	t.Run("passed, and its node came back as a new one: an ordinary node", func(t *testing.T) {
		ro := pt.Rollout("r").CanaryNodes("gpu-00").Approved().Parallel(3).MaxUnavailable(3).Build()
		ro.Status.Canary = v1alpha1.CanaryStatus{Result: v1alpha1.CanaryPassed, Nodes: []string{"gpu-00"}}
		nodes := []planner.Node{pt.Node("gpu-00").Build(), pt.Node("gpu-01").Build()}
		got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
		want := []string{
			"gpu-00 Pending→Draining [cordon] node started: cordoning and draining for driver " + pt.Target,
			"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + pt.Target,
		}
		if diff := cmp.Diff(want, briefs(got.Transitions)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
	})
}

// TestJoinPool: where the spec names pools (pools that share a product), a
// node without a pool label joins the one pool whose selector matches it,
// in the same write as its driver label, or alone when it has a driver
// label; none or two matching leave it without one; a node settling Done
// gets it too; on the gpu-operator actuator a join gives the pool label
// alone.
func TestJoinPool(t *testing.T) {
	const target, previous = pt.Target, pt.Previous
	// The rollout selects every node labelled selected=yes (the test
	// rollouts select by the pool label, which a join may give).
	rollout := func() *pt.RolloutBuilder {
		return pt.Rollout("r").Paused().Selector("selected", "yes").Pool("mig", "mig", "on").Pool("plain", "mig", "off")
	}
	node := func(name string, kv ...string) *pt.NodeBuilder {
		return pt.Node(name).Labels(append([]string{"selected", "yes"}, kv...)...).Driver(false, "")
	}
	noCanary := " (no driver yet; the rollout has no canary)"
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    []string
		pool    string // what gpu-09 is given
	}{
		{
			name:    "one pool matches: its name with the driver, in one write",
			rollout: rollout(),
			nodes:   []*pt.NodeBuilder{node("gpu-09", "mig", "on")},
			want:    []string{"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + noCanary + ", in pool mig (the one pool whose selector it matches)"},
			pool:    "mig",
		},
		{
			name:    "a driver label but no pool label: the pool alone",
			rollout: rollout(),
			nodes:   []*pt.NodeBuilder{node("gpu-09", "mig", "off", v1alpha1.LabelDriver, previous).Driver(true, previous)},
			want:    []string{"gpu-09 Pending→Pending [join] joined without a pool label: in pool plain (the one pool whose selector it matches)"},
			pool:    "plain",
		},
		{
			name:    "two pools match, or none: no pool label",
			rollout: rollout().Pool("also-mig", "mig", "on"),
			nodes:   []*pt.NodeBuilder{node("gpu-08", "mig", "on"), node("gpu-09", "mig", "other")},
			want: []string{
				"gpu-08 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + noCanary,
				"gpu-09 Pending→Pending [join driver=" + target + "] joined without a driver label: labelled " + target + noCanary,
			},
		},
		{
			name:    "settled Done on the target: the pool in the same write",
			rollout: rollout(),
			nodes:   []*pt.NodeBuilder{node("gpu-09", "mig", "on").Driver(true, target)},
			want:    []string{"gpu-09 Pending→Done [driver=" + target + "] already on driver " + target + ": nothing to install"},
			pool:    "mig",
		},
		{
			name:    "the gpu-operator actuator: the pool label alone",
			rollout: rollout().Actuator(v1alpha1.ActuatorGPUOperator),
			nodes:   []*pt.NodeBuilder{node("gpu-09", "mig", "on", v1alpha1.LabelOperatorUpgradeSkip, "true")},
			want:    []string{"gpu-09 Pending→Pending [join] joined without a pool label: in pool mig (the one pool whose selector it matches)"},
			pool:    "mig",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planOnce(tt.rollout, tt.nodes)
			if diff := cmp.Diff(tt.want, briefs(got.Transitions)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			pools := map[string]string{}
			for _, tr := range got.Transitions {
				if tr.Pool != "" {
					pools[tr.Node] = tr.Pool
				}
			}
			want := map[string]string{}
			if tt.pool != "" {
				want["gpu-09"] = tt.pool
			}
			if diff := cmp.Diff(want, pools); diff != "" {
				t.Errorf("pools given (-want +got):\n%s", diff)
			}
		})
	}
}
