package planner_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// now is Monday 2026-06-01 10:00 UTC.
var now = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

// brief renders a transition with its actions, for readable -want +got diffs.
func brief(t planner.Transition) string {
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{
		{t.Failure, "failure"}, {t.Cordon, "cordon"}, {t.RecordAdminCordon, "admin-cordon"},
		{t.Uncordon, "uncordon"}, {t.Quarantine, "quarantine"}, {t.Join, "join"}, {t.Driver != "", "driver=" + t.Driver},
		{t.HoldOFED, "hold-ofed"}, {t.ReleaseOFED, "release-ofed"}, {t.RestartDriver, "restart-driver"},
	} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	return fmt.Sprintf("%s %s→%s [%s] %s", t.Node, t.From, t.To, strings.Join(flags, " "), t.Reason)
}

func briefs(ts []planner.Transition) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, brief(t))
	}
	return out
}

func TestPlanTransitions(t *testing.T) {
	const (
		target   = pt.Target
		previous = pt.Previous
	)
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    []string
	}{
		{
			name:    "canary goes first and alone",
			rollout: pt.Rollout("r").Canary(1).Approved().Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00"), pt.Node("gpu-01"), pt.Node("gpu-02")},
			want:    []string{"gpu-00 Pending→Draining [cordon] canary node started: cordoning and draining for driver " + target},
		},
		{
			name:    "named canary",
			rollout: pt.Rollout("r").CanaryNodes("gpu-02").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00"), pt.Node("gpu-01"), pt.Node("gpu-02")},
			want:    []string{"gpu-02 Pending→Draining [cordon] canary node started: cordoning and draining for driver " + target},
		},
		{
			name:    "passed canary waits for approval",
			rollout: pt.Rollout("r").Canary(1).Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)), pt.Node("gpu-01")},
			want:    []string{},
		},
		{
			name:    "an approval naming another rollout is ignored",
			rollout: pt.Rollout("r").Canary(1).Approval("other").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)), pt.Node("gpu-01")},
			want:    []string{},
		},
		{
			name:    "auto-approve after a clean canary",
			rollout: pt.Rollout("r").Canary(1).AutoApprove().Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)), pt.Node("gpu-01")},
			want:    []string{"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + target},
		},
		{
			name:    "approved: fill up to parallelNodes",
			rollout: pt.Rollout("r").Canary(1).Approved().Parallel(2).MaxUnavailable(5),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)),
				pt.Node("gpu-01"), pt.Node("gpu-02"), pt.Node("gpu-03")},
			want: []string{
				"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + target,
				"gpu-02 Pending→Draining [cordon] node started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "cordoned and NotReady nodes eat into maxUnavailable",
			rollout: pt.Rollout("r").Parallel(5).MaxUnavailable(3),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").NotReady(), pt.Node("gpu-01"),
				pt.Node("gpu-02"), pt.Node("gpu-03").Cordoned(), pt.Node("gpu-04")},
			// gpu-03 costs nothing (already out) and goes first; gpu-01 takes
			// the last unit; gpu-00 is NotReady and cannot start.
			want: []string{
				"gpu-03 Pending→Draining [admin-cordon] node started: already cordoned by an admin, draining for driver " + target,
				"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "out-of-service selector counts and is not started",
			rollout: pt.Rollout("r").Parallel(5).MaxUnavailable(2).OutOfService("remediation", "true"),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous, "remediation", "true"),
				pt.Node("gpu-01"), pt.Node("gpu-02")},
			want: []string{"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + target},
		},
		{
			name:    "a finished node's slot is refilled in the same pass",
			rollout: pt.Rollout("r").Parallel(1).Soak(30 * time.Minute),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeSoaking, ago(30*time.Minute)).Driver(true, target), pt.Node("gpu-01")},
			want: []string{
				"gpu-00 Soaking→Done [uncordon] soaked 30m clean on " + target + "; uncordoned",
				"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "an admin's cordon survives Done",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").AdminCordoned().In(v1alpha1.NodeSoaking, ago(time.Hour)).Driver(true, target)},
			want:    []string{"gpu-00 Soaking→Done [] soaked 30m clean on " + target + "; left cordoned as an admin had cordoned it before the rollout"},
		},
		{
			name:    "nodes outside the selector are never touched",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("a100-00").Labels(v1alpha1.LabelPool, "a100"), pt.Node("gpu-00")},
			want:    []string{"gpu-00 Pending→Draining [cordon] node started: cordoning and draining for driver " + target},
		},
		{
			name:    "drained node installs the target",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(4*time.Minute)).Drained()},
			want:    []string{"gpu-00 Draining→Installing [driver=" + target + "] drained in 4m; installing driver " + target},
		},
		{
			name:    "drain timeout fails the node",
			rollout: pt.Rollout("r").Budget(1).Timeouts(10*time.Minute, 0, 0),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(10*time.Minute)), pt.Node("gpu-01")},
			want: []string{
				"gpu-00 Draining→RollingBack [failure driver=" + previous + "] drain did not finish within 10m; rolling back to " + previous,
			},
		},
		{
			name:    "the cheapest nodes first: idle, then the least GPU work in flight",
			rollout: pt.Rollout("r").Parallel(2).MaxUnavailable(2),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").GPUWork(2, 10), pt.Node("gpu-01").GPUWork(1, 0.5),
				pt.Node("gpu-02"), pt.Node("gpu-03").GPUWork(1, 3)},
			want: []string{
				"gpu-02 Pending→Draining [cordon] node (idle: no GPU pod) started: cordoning and draining for driver " + target,
				"gpu-01 Pending→Draining [cordon] node (1 GPU pod, 0.5 GPU-hours in flight; the pending nodes go least first) started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "a canary the spec names is the canary, whatever its GPU work",
			rollout: pt.Rollout("r").CanaryNodes("gpu-00").Parallel(2).MaxUnavailable(2),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").GPUWork(2, 10), pt.Node("gpu-01")},
			want: []string{
				"gpu-00 Pending→Draining [cordon] canary node (2 GPU pods, 10.0 GPU-hours in flight; the pending nodes go least first) started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "a canary by count is the cheapest pending node",
			rollout: pt.Rollout("r").Canary(1).Parallel(2).MaxUnavailable(2),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").GPUWork(2, 10), pt.Node("gpu-01").GPUWork(1, 3), pt.Node("gpu-02").GPUWork(1, 1)},
			want: []string{
				"gpu-02 Pending→Draining [cordon] canary node (1 GPU pod, 1.0 GPU-hours in flight; the pending nodes go least first) started: cordoning and draining for driver " + target,
			},
		},
		{
			name:    "a wait for jobs comes before the drain timeout",
			rollout: pt.Rollout("r").Budget(1).Timeouts(10*time.Minute, 0, 0).WaitForJobs("job", "train", time.Hour),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(69*time.Minute)), pt.Node("gpu-01")},
			want:    []string{},
		},
		{
			name:    "the drain timeout counts after the wait for jobs",
			rollout: pt.Rollout("r").Budget(1).Timeouts(10*time.Minute, 0, 0).WaitForJobs("job", "train", time.Hour),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(70*time.Minute)), pt.Node("gpu-01")},
			want: []string{
				"gpu-00 Draining→RollingBack [failure driver=" + previous + "] drain did not finish within 10m after waiting 1h for the jobs named; rolling back to " + previous,
			},
		},
		{
			name:    "install failure fails the node",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeInstalling, ago(time.Minute)).DriverFailed()},
			want: []string{
				"gpu-00 Installing→RollingBack [failure driver=" + previous + "] driver " + target + " failed to install; rolling back to " + previous,
			},
		},
		{
			name:    "install not Ready in time fails the node",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeInstalling, ago(20*time.Minute)).Driver(false, "")},
			want: []string{
				"gpu-00 Installing→RollingBack [failure driver=" + previous + "] driver " + target + " not Ready within 20m; rolling back to " + previous,
			},
		},
		{
			name:    "wrong version reported fails the node at the validate timeout",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeValidating, ago(10*time.Minute)).Driver(true, "575.1.1")},
			want: []string{
				"gpu-00 Validating→RollingBack [failure driver=" + previous + "] node reports 575.1.1 after 10m, want " + target + "; rolling back to " + previous,
			},
		},
		{
			name:    "XID during the soak fails the node",
			rollout: pt.Rollout("r").Budget(1),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeSoaking, ago(10*time.Minute)).Driver(true, target).
				Signal(ago(time.Hour), "XidError"). // before the soak: ignored
				Signal(ago(2*time.Minute), "XidError")},
			want: []string{
				"gpu-00 Soaking→RollingBack [failure driver=" + previous + "] event XidError after 8m of soak; rolling back to " + previous,
			},
		},
		{
			name:    "rollback done puts the node back in service",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeRollingBack, ago(9*time.Minute)).Failed().Driver(true, previous)},
			want:    []string{"gpu-00 RollingBack→RolledBack [uncordon] back on " + previous + " after 9m; uncordoned"},
		},
		{
			name:    "failed rollback quarantines",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeRollingBack, ago(9*time.Minute)).Failed().DriverFailed()},
			want: []string{"gpu-00 RollingBack→Quarantined [quarantine] rollback to " + previous +
				" failed: driver pod failed to install; quarantined (label and taint), left cordoned"},
		},
		{
			name:    "budget exhausted starts nothing",
			rollout: pt.Rollout("r").Budget(1).Parallel(3).MaxUnavailable(5),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeRolledBack, ago(time.Hour)).Failed(),
				pt.Node("gpu-01").In(v1alpha1.NodeRolledBack, ago(time.Hour)).Failed(), pt.Node("gpu-02")},
			want: []string{},
		},
		{
			name:    "paused: in flight continues, nothing starts",
			rollout: pt.Rollout("r").Paused().Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained(), pt.Node("gpu-01")},
			want:    []string{"gpu-00 Draining→Installing [driver=" + target + "] drained in 1m; installing driver " + target},
		},
		{
			name:    "abort rolls back every upgraded node, pending untouched",
			rollout: pt.Rollout("r").Abort().Parallel(3).MaxUnavailable(3),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)).Driver(true, target),
				pt.Node("gpu-01").In(v1alpha1.NodeSoaking, ago(time.Minute)).Driver(true, target), pt.Node("gpu-02")},
			want: []string{
				"gpu-00 Done→RollingBack [cordon driver=" + previous + "] rollout aborted while Done; rolling back to " + previous,
				"gpu-01 Soaking→RollingBack [driver=" + previous + "] rollout aborted while Soaking; rolling back to " + previous,
			},
		},
		{
			name:    "outside the window nothing starts, in flight finishes",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3).Window("22:00", "06:00", "UTC"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained(), pt.Node("gpu-01")},
			want:    []string{"gpu-00 Draining→Installing [driver=" + target + "] drained in 1m; installing driver " + target},
		},
		{
			name:    "inside a freeze nothing starts",
			rollout: pt.Rollout("r").Freeze(ago(time.Hour), now.Add(time.Hour), "launch"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00")},
			want:    []string{},
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

// planOnce plans the rollout over the nodes, each built, at now.
func planOnce(rollout *pt.RolloutBuilder, nodes []*pt.NodeBuilder) planner.Result {
	var built []planner.Node
	for _, n := range nodes {
		built = append(built, n.Build())
	}
	return planner.Plan(planner.Snapshot{Rollout: rollout.Build(), Nodes: built}, now)
}
