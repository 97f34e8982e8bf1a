package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// summary is the part of a status a person reads first.
type summary struct {
	Phase      v1alpha1.RolloutPhase
	Progress   string
	BudgetUsed int32
	Canary     v1alpha1.CanaryResult
	True       []string // conditions that are True
}

func summarise(st v1alpha1.DriverRolloutStatus) summary {
	s := summary{Phase: st.Phase, Progress: st.Progress, BudgetUsed: st.BudgetUsed, Canary: st.Canary.Result}
	for _, c := range st.Conditions {
		if c.Status == metav1.ConditionTrue {
			s.True = append(s.True, c.Type)
		}
	}
	return s
}

func TestStatus(t *testing.T) {
	done := func(name string) *pt.NodeBuilder {
		return pt.Node(name).In(v1alpha1.NodeDone, ago(time.Hour)).Driver(true, pt.Target)
	}
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    summary
	}{
		{
			name: "progressing", rollout: pt.Rollout("r"),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00"), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseProgressing, Progress: "0/2", Canary: v1alpha1.CanaryNone, True: []string{"Reconciling"}},
		},
		{
			name: "completed", rollout: pt.Rollout("r"),
			nodes: []*pt.NodeBuilder{done("gpu-00"), done("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseCompleted, Progress: "2/2", Canary: v1alpha1.CanaryNone, True: []string{"Ready", "Completed"}},
		},
		{
			// A rolled-back node is a failure the operator must see: not
			// Completed (Ready), but a terminal condition of its own.
			name: "completed with a node rolled back, within budget", rollout: pt.Rollout("r").Budget(1),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01").In(v1alpha1.NodeRolledBack, ago(time.Hour)).Failed()},
			want: summary{Phase: v1alpha1.PhaseCompletedWithFailures, Progress: "1/2", BudgetUsed: 1, Canary: v1alpha1.CanaryNone,
				True: []string{"Stalled", "CompletedWithFailures"}},
		},
		{
			name: "completed with a node quarantined, within budget", rollout: pt.Rollout("r").Budget(2),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01").In(v1alpha1.NodeQuarantined, ago(time.Hour)).Failed()},
			want: summary{Phase: v1alpha1.PhaseCompletedWithFailures, Progress: "1/2", BudgetUsed: 1, Canary: v1alpha1.CanaryNone,
				True: []string{"Stalled", "CompletedWithFailures"}},
		},
		{
			name: "a node of another rollout is not done", rollout: pt.Rollout("r"),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01").Owner("other")},
			want:  summary{Phase: v1alpha1.PhaseProgressing, Progress: "1/2", Canary: v1alpha1.CanaryNone, True: []string{"Reconciling", "Overlap"}},
		},
		{
			name: "waiting for approval", rollout: pt.Rollout("r").Canary(1),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseWaitingForApproval, Progress: "1/2", Canary: v1alpha1.CanaryPassed, True: []string{"WaitingForApproval"}},
		},
		{
			name: "canary failed", rollout: pt.Rollout("r").Canary(1).Budget(3),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeRolledBack, ago(time.Hour)).Failed(), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseStalled, Progress: "0/2", BudgetUsed: 1, Canary: v1alpha1.CanaryFailed, True: []string{"Stalled"}},
		},
		{
			name: "budget exhausted", rollout: pt.Rollout("r"),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeQuarantined, ago(time.Hour)).Failed(), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseStalled, Progress: "0/2", BudgetUsed: 1, Canary: v1alpha1.CanaryNone, True: []string{"Stalled", "BudgetExhausted"}},
		},
		{
			name: "paused", rollout: pt.Rollout("r").Paused(),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00")},
			want:  summary{Phase: v1alpha1.PhasePaused, Progress: "0/1", Canary: v1alpha1.CanaryNone, True: []string{"Paused"}},
		},
		{
			name: "outside window", rollout: pt.Rollout("r").Window("22:00", "23:00", "UTC"),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00")},
			want:  summary{Phase: v1alpha1.PhaseOutsideWindow, Progress: "0/1", Canary: v1alpha1.CanaryNone, True: []string{"Reconciling", "OutsideWindow"}},
		},
		{
			name: "aborting", rollout: pt.Rollout("r").Abort(),
			nodes: []*pt.NodeBuilder{done("gpu-00"), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseAborting, Progress: "0/2", Canary: v1alpha1.CanaryNone, True: []string{"Reconciling", "Aborted"}},
		},
		{
			name: "aborted", rollout: pt.Rollout("r").Abort(),
			nodes: []*pt.NodeBuilder{pt.Node("gpu-00").In(v1alpha1.NodeRolledBack, ago(time.Hour)), pt.Node("gpu-01")},
			want:  summary{Phase: v1alpha1.PhaseAborted, Progress: "0/2", Canary: v1alpha1.CanaryNone, True: []string{"Aborted"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planOnce(tt.rollout, tt.nodes)
			if diff := cmp.Diff(tt.want, summarise(got.Status)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusKeepsTransitionTimes: writing the same status again must not move
// lastTransitionTime, or every pass would be a change and a watch event.
func TestStatusKeepsTransitionTimes(t *testing.T) {
	ro := pt.Rollout("r").Build()
	nodes := []planner.Node{pt.Node("gpu-00").In(v1alpha1.NodeDraining, ago(time.Minute)).Build()}
	first := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now)
	ro.Status = first.Status
	second := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes}, now.Add(time.Minute))
	if diff := cmp.Diff(first.Status, second.Status); diff != "" {
		t.Errorf("status changed with nothing new (-first +second):\n%s", diff)
	}
}
