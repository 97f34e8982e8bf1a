package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestNodesAlreadyOnTarget: a rollout whose target is what the nodes run
// (render writes one for every cluster no rollout has reached) completes
// without draining anything or waiting for approval; in a mixed pool the
// canary is a node that still needs the driver.
func TestNodesAlreadyOnTarget(t *testing.T) {
	now := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	onTarget := func(name string) planner.Node {
		return pt.Node(name).Driver(true, pt.Target).Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Target).Build()
	}
	t.Run("every node on the target", func(t *testing.T) {
		ro := pt.Rollout("r").Canary(1).Build()
		res := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{onTarget("gpu-00"), onTarget("gpu-01")}}, now)
		var got []string
		for _, tr := range res.Transitions {
			if tr.Cordon || tr.To != v1alpha1.NodeDone {
				t.Errorf("%s: %s → %s cordon=%t: a node on the target must be left alone", tr.Node, tr.From, tr.To, tr.Cordon)
			}
			got = append(got, tr.Node+": "+tr.Reason)
		}
		want := []string{"gpu-00: already on driver 580.95.05: nothing to install", "gpu-01: already on driver 580.95.05: nothing to install"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if res.Status.Phase != v1alpha1.PhaseCompleted {
			t.Errorf("phase %s, want Completed (no approval to wait for)", res.Status.Phase)
		}
	})
	t.Run("the canary is a node that needs the driver", func(t *testing.T) {
		ro := pt.Rollout("r").Canary(1).Build()
		old := pt.Node("gpu-01").Driver(true, pt.Previous).Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous).Build()
		res := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{onTarget("gpu-00"), old}}, now)
		if diff := cmp.Diff([]string{"gpu-01"}, res.Status.Canary.Nodes); diff != "" {
			t.Errorf("canary (-want +got):\n%s", diff)
		}
	})
	t.Run("a node whose label still selects the old driver is not settled", func(t *testing.T) {
		ro := pt.Rollout("r").Canary(0).Build()
		odd := pt.Node("gpu-00").Driver(true, pt.Target).Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous).Build()
		res := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{odd}}, now)
		if len(res.Transitions) != 1 || res.Transitions[0].To != v1alpha1.NodeDraining {
			t.Errorf("transitions %+v: want the node started like any other", res.Transitions)
		}
	})
}
