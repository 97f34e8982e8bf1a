package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestDriverMatches pins the comparison of a node's reported driver with a
// rollout's version: exact for a full version, by major for a precompiled
// branch.
func TestDriverMatches(t *testing.T) {
	tests := []struct {
		reported, want string
		match          bool
	}{
		{"580.95.05", "580.95.05", true},
		{"580.95.05", "580.82.07", false},
		{"570.86.15", "570", true},  // precompiled branch: any build of it
		{"570.124.06", "570", true}, // the operator picks the build per kernel
		{"575.51.02", "570", false},
		{"5700.1.2", "570", false},
		{"570", "570", true},
		{"570", "570.86.15", false}, // a branch report does not pin a version
		{"", "570", false},
		{"", "", false},
		{"570.86.15", "", false},
	}
	for _, tt := range tests {
		if got := planner.DriverMatches(tt.reported, tt.want); got != tt.match {
			t.Errorf("DriverMatches(%q, %q) = %t, want %t", tt.reported, tt.want, got, tt.match)
		}
	}
}

// TestPlanPrecompiledBranch drives the planner with a rollout whose
// versions are precompiled branches: a node is on the branch when GFD
// reports any build of it, and off it when it reports another branch.
func TestPlanPrecompiledBranch(t *testing.T) {
	tests := []struct {
		name             string
		target, previous string
		node             *pt.NodeBuilder
		want             []string
	}{
		{
			name:   "a build of the target branch validates",
			target: "580", previous: pt.Previous,
			node: pt.Node("gpu-00").In(v1alpha1.NodeValidating, ago(time.Minute)).Driver(true, "580.95.05"),
			want: []string{"gpu-00 Validating→Soaking [] node reports driver 580.95.05 (branch 580); soaking for 30m"},
		},
		{
			name:   "another branch fails at the validate timeout",
			target: "580", previous: pt.Previous,
			node: pt.Node("gpu-00").In(v1alpha1.NodeValidating, ago(10*time.Minute)).Driver(true, "575.51.02"),
			want: []string{"gpu-00 Validating→RollingBack [failure driver=" + pt.Previous + "] node reports 575.51.02 after 10m, want 580; rolling back to " + pt.Previous},
		},
		{
			name:   "rollback to a branch is done on any build of it",
			target: pt.Target, previous: "570",
			node: pt.Node("gpu-00").In(v1alpha1.NodeRollingBack, ago(9*time.Minute)).Failed().Driver(true, "570.124.06"),
			want: []string{"gpu-00 RollingBack→RolledBack [uncordon] back on 570 after 9m; uncordoned"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := pt.Rollout("r").Budget(1).Timeouts(10*time.Minute, 10*time.Minute, 10*time.Minute).Build()
			ro.Spec.TargetVersion, ro.Spec.PreviousVersion = tt.target, tt.previous
			got := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: []planner.Node{tt.node.Build()}}, now)
			if diff := cmp.Diff(tt.want, briefs(got.Transitions)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
		})
	}
}
