package planner_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestWaitingForJobs: a draining node waits for the pods named until the
// timeout after it started draining, not a moment longer; a rollout that
// names none never waits.
func TestWaitingForJobs(t *testing.T) {
	started := now.Add(-time.Hour)
	with := pt.Rollout("r").WaitForJobs("job", "train", time.Hour).Build()
	for _, tt := range []struct {
		at   time.Time
		want bool
	}{{started, true}, {now.Add(-time.Second), true}, {now, false}, {now.Add(time.Minute), false}} {
		if got := planner.WaitingForJobs(&with.Spec, started, tt.at); got != tt.want {
			t.Errorf("at %s after the start: waiting %t, want %t", tt.at.Sub(started), got, tt.want)
		}
	}
	if planner.WaitingForJobs(&pt.Rollout("r").Build().Spec, started, started) {
		t.Error("a rollout that names no job waits")
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Labels: map[string]string{"job": "train"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "serve-0", Labels: map[string]string{"app": "serve"}}},
	}
	if got := planner.JobPods(&with.Spec, pods); len(got) != 1 || got[0].Name != "train-0" {
		t.Errorf("JobPods: %v", got)
	}
	if got := planner.JobPods(&pt.Rollout("r").Build().Spec, pods); len(got) != 0 {
		t.Errorf("JobPods of a rollout that names none: %v", got)
	}
}
