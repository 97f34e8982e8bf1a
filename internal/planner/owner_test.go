package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestAdminCordonEveryPath: the fact "someone else cordoned this node" is
// recorded by whatever move first meets the node cordoned while the
// rollout holds no cordon of its own on it, and such a node is never
// uncordoned (issue 16, defect 1).
func TestAdminCordonEveryPath(t *testing.T) {
	const target, previous = pt.Target, pt.Previous
	onTarget := func(name string) *pt.NodeBuilder {
		return pt.Node(name).Driver(true, target).Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, target)
	}
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    []string
	}{
		{
			name:    "settled Done while cordoned",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{onTarget("gpu-00").Cordoned()},
			want: []string{"gpu-00 Pending→Done [admin-cordon driver=" + target + "] already on driver " + target +
				": nothing to install; left cordoned as someone else had cordoned it"},
		},
		{
			name:    "started while cordoned",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Cordoned()},
			want:    []string{"gpu-00 Pending→Draining [admin-cordon] node started: already cordoned by an admin, draining for driver " + target},
		},
		{
			name:    "rolled back by an abort after an admin cordoned the Done node",
			rollout: pt.Rollout("r").Abort(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeDone, ago(time.Hour)).Driver(true, target).Cordoned()},
			want:    []string{"gpu-00 Done→RollingBack [admin-cordon driver=" + previous + "] rollout aborted while Done; rolling back to " + previous},
		},
		{
			name:    "the recorded cordon survives the rollback",
			rollout: pt.Rollout("r").Abort(),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").AdminCordoned().In(v1alpha1.NodeRollingBack, ago(time.Minute)).Driver(true, previous)},
			want:    []string{"gpu-00 RollingBack→RolledBack [] back on " + previous + " after 1m; left cordoned as an admin had cordoned it before the rollout"},
		},
		{
			name:    "quarantined with the admin's cordon recorded",
			rollout: pt.Rollout("r").Budget(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").AdminCordoned().In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().DriverFailed()},
			want: []string{"gpu-00 RollingBack→Quarantined [quarantine] rollback to " + previous +
				" failed: driver pod failed to install; quarantined (label and taint), left cordoned"},
		},
		{
			name:    "a stale mark on a schedulable node: the rollout's cordon is its own",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").AdminCordoned().Uncordoned()},
			want:    []string{"gpu-00 Pending→Draining [cordon] node started: cordoning and draining for driver " + target},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []planner.Node
			for _, n := range tt.nodes {
				nodes = append(nodes, n.Build())
			}
			got := planner.Plan(planner.Snapshot{Rollout: tt.rollout.Build(), Nodes: nodes}, now)
			if diff := cmp.Diff(tt.want, briefs(got.Transitions)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("what a move leaves on the node", func(t *testing.T) {
		n := pt.Node("gpu-00").AdminCordoned().Uncordoned().Build()
		planner.Transition{To: v1alpha1.NodeDraining, Cordon: true}.ApplyTo(&n, "r", now)
		if n.AdminCordoned || !n.Unschedulable || n.Owner != "r" {
			t.Errorf("after a cordon: %+v; want the stale mark gone, cordoned, owned by r", n)
		}
		m := pt.Node("gpu-01").In(v1alpha1.NodeDone, now).Cordoned().Build()
		planner.Transition{To: v1alpha1.NodeRollingBack, RecordAdminCordon: true}.ApplyTo(&m, "r", now)
		planner.Release(&m)
		if !m.AdminCordoned || !m.Unschedulable || m.Owner != "" || m.Phase != "" {
			t.Errorf("released: %+v; want the mark and the cordon kept, no owner, no phase", m)
		}
	})
}

// TestOneOwnerPerNode: a rollout leaves the nodes of other rollouts alone,
// counts them as unavailable and names them in its Overlap condition; on a
// node that belongs to none, the older of two rollouts goes first (issue
// 16, defect 2).
func TestOneOwnerPerNode(t *testing.T) {
	t0 := now.Add(-time.Hour)
	older := planner.Peer{Name: "older", Created: t0.Add(-time.Hour), NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPool: pt.Pool}}}
	younger := planner.Peer{Name: "younger", Created: t0.Add(time.Hour), NodeSelector: older.NodeSelector}
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		peers   []planner.Peer
		want    []string
		overlap string // a part of the Overlap message; empty: no overlap
	}{
		{
			name:    "another rollout's node is not started and counts as unavailable",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(1),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("other").Cordoned(), pt.Node("gpu-01")},
			want:    []string{},
			overlap: "1 node belongs to DriverRollout other (gpu-00)",
		},
		{
			name:    "with room to spare, its own nodes go on",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(2),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("other"), pt.Node("gpu-01"), pt.Node("gpu-02")},
			want:    []string{"gpu-01 Pending→Draining [cordon] node started: cordoning and draining for driver " + pt.Target},
			overlap: "1 node of 3 selected",
		},
		{
			name:    "another rollout's node is not settled",
			rollout: pt.Rollout("r"),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("other").Driver(true, pt.Target)},
			want:    []string{},
			overlap: "belongs to DriverRollout other",
		},
		{
			name:    "a free node an older rollout selects is left to it",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00"), pt.Node("gpu-01")},
			peers:   []planner.Peer{older},
			want:    []string{},
			overlap: "2 nodes left to the older DriverRollout older, which selects them too (gpu-00, gpu-01)",
		},
		{
			name:    "a younger rollout does not hold it back",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00")},
			peers:   []planner.Peer{younger},
			want:    []string{"gpu-00 Pending→Draining [cordon] node started: cordoning and draining for driver " + pt.Target},
		},
		{
			name:    "an older rollout being deleted does not hold it back",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00")},
			peers:   []planner.Peer{{Name: older.Name, Created: older.Created, NodeSelector: older.NodeSelector, Deleting: true}},
			want:    []string{"gpu-00 Pending→Draining [cordon] node started: cordoning and draining for driver " + pt.Target},
		},
		{
			name:    "its own nodes go on whoever else selects them",
			rollout: pt.Rollout("r").Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("r").In(v1alpha1.NodeDraining, ago(time.Minute)).Drained()},
			peers:   []planner.Peer{older},
			want:    []string{"gpu-00 Draining→Installing [driver=" + pt.Target + "] drained in 1m; installing driver " + pt.Target},
		},
		{
			name:    "the canary is never another rollout's node",
			rollout: pt.Rollout("r").Canary(1).Parallel(3).MaxUnavailable(3),
			nodes:   []*pt.NodeBuilder{pt.Node("gpu-00").Owner("other"), pt.Node("gpu-01")},
			want:    []string{"gpu-01 Pending→Draining [cordon] canary node started: cordoning and draining for driver " + pt.Target},
			overlap: "DriverRollout other",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []planner.Node
			for _, n := range tt.nodes {
				nodes = append(nodes, n.Build())
			}
			ro := tt.rollout.Build()
			ro.CreationTimestamp = metav1.NewTime(t0)
			got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes, Others: tt.peers}, now)
			if diff := cmp.Diff(tt.want, briefs(got.Transitions)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionOverlap)
			switch {
			case c == nil:
				t.Fatal("no Overlap condition")
			case tt.overlap == "" && c.Status != metav1.ConditionFalse:
				t.Errorf("Overlap %s: %s; want False", c.Status, c.Message)
			case tt.overlap != "" && (c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, tt.overlap)):
				t.Errorf("Overlap %s: %q; want True saying %q", c.Status, c.Message, tt.overlap)
			}
			if tt.overlap != "" && got.Status.Phase == v1alpha1.PhaseCompleted {
				t.Errorf("phase Completed with nodes left to other rollouts")
			}
		})
	}
}
