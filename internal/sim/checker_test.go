package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

// TestChecker feeds the checker hand-made steps, each breaking one rule, so
// that a checker that stopped checking would fail here.
func TestChecker(t *testing.T) {
	start := func(name string) planner.Transition {
		return planner.Transition{Node: name, From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Reason: "started", Cordon: true}
	}
	// apply returns the nodes after the transitions.
	apply := func(nodes []planner.Node, ts ...planner.Transition) []planner.Node {
		out := append([]planner.Node(nil), nodes...)
		for _, tr := range ts {
			for i := range out {
				if out[i].Name == tr.Node {
					tr.ApplyTo(&out[i], "r", monday)
				}
			}
		}
		return out
	}
	two := pt.Nodes("gpu", 2)
	tests := []struct {
		name    string
		rollout *v1alpha1.DriverRollout
		before  []planner.Node
		ts      []planner.Transition
		canary  []string
		want    string // a word of the violation; empty: none
	}{
		{"a clean start", pt.Rollout("r").Build(), two, []planner.Transition{start("gpu-00")}, nil, ""},
		{"too many unavailable", pt.Rollout("r").Parallel(2).Build(), two, []planner.Transition{start("gpu-00"), start("gpu-01")}, nil, "maxUnavailable 1"},
		{"too many in flight", pt.Rollout("r").MaxUnavailable(2).Build(), two, []planner.Transition{start("gpu-00"), start("gpu-01")}, nil, "parallelNodes 1"},
		{"outside the window", pt.Rollout("r").Window("22:00", "23:00", "UTC").Build(), two, []planner.Transition{start("gpu-00")}, nil, "outside every maintenance window"},
		{"paused", pt.Rollout("r").Paused().Build(), two, []planner.Transition{start("gpu-00")}, nil, "paused=true"},
		{"past the canary unapproved", pt.Rollout("r").Canary(1).Build(),
			[]planner.Node{pt.Node("gpu-00").In(v1alpha1.NodeDone, monday).Build(), pt.Node("gpu-01").Build()},
			[]planner.Transition{start("gpu-01")}, []string{"gpu-00"}, "without approval"},
		{"before the canary passed", pt.Rollout("r").Canary(1).Approved().Build(), two,
			[]planner.Transition{start("gpu-01")}, []string{"gpu-00"}, "before the canary passed"},
		{"over budget", pt.Rollout("r").Build(),
			[]planner.Node{pt.Node("gpu-00").In(v1alpha1.NodeRolledBack, monday).Failed().Build(), pt.Node("gpu-01").Build()},
			[]planner.Transition{start("gpu-01")}, nil, "budget 0"},
		{"forbidden move", pt.Rollout("r").Build(), two,
			[]planner.Transition{{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeSoaking, Reason: "x"}}, nil, "forbidden move"},
		{"settled Done while on the old driver", pt.Rollout("r").Build(), two,
			[]planner.Transition{{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDone, Reason: "x"}}, nil, "settled Done without being on"},
		{"no reason", pt.Rollout("r").Build(), two,
			[]planner.Transition{{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining}}, nil, "without a reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := simcheck.NewChecker()
			res := planner.Result{Transitions: tt.ts}
			res.Status.Canary.Nodes = tt.canary
			c.Step(sim.Step{At: monday, Rollout: tt.rollout, Before: tt.before, After: apply(tt.before, tt.ts...), Result: res})
			got := strings.Join(c.Violations(), "\n")
			if tt.want == "" {
				if diff := cmp.Diff("", got); diff != "" {
					t.Errorf("violations (-want +got):\n%s", diff)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("violations %q do not mention %q", got, tt.want)
			}
		})
	}
}

func TestCheckerFinal(t *testing.T) {
	ro := pt.Rollout("r").Build()
	c := simcheck.NewChecker()
	before := pt.Nodes("gpu", 3)
	after := append([]planner.Node(nil), before...)
	tr := planner.Transition{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Reason: "started", Cordon: true}
	tr.ApplyTo(&after[0], "r", monday)
	c.Step(sim.Step{At: monday, Rollout: ro, Before: before, After: after, Result: planner.Result{Transitions: []planner.Transition{tr}}})
	after[1].Phase = v1alpha1.NodeDone // moved without a transition
	after[2].Phase = v1alpha1.NodePending
	c.Final(ro, after)
	want := []string{
		"at the end: gpu-00 was started and ended Draining",
		"at the end: gpu-01 was never started but ended Done",
	}
	if diff := cmp.Diff(want, c.Violations()); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestCheckerOwnersAndCordons feeds the checker hand-made steps that break
// the rules between rollouts and about who holds a cordon.
func TestCheckerOwnersAndCordons(t *testing.T) {
	ro := pt.Rollout("r").Parallel(3).MaxUnavailable(3).Build()
	ro.CreationTimestamp = metav1.NewTime(monday)
	start := planner.Transition{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Reason: "started", Cordon: true}
	owned := func(owner string) []planner.Node {
		n := pt.Nodes("gpu", 2)
		n[0].Owner = owner
		return n
	}
	after := func(before []planner.Node, ts ...planner.Transition) []planner.Node {
		out := append([]planner.Node(nil), before...)
		for _, tr := range ts {
			for i := range out {
				if out[i].Name == tr.Node {
					tr.ApplyTo(&out[i], "r", monday)
				}
			}
		}
		return out
	}
	cordoned := pt.Nodes("gpu", 1)
	cordoned[0].Unschedulable = true
	soaking := []planner.Node{pt.Node("gpu-00").In(v1alpha1.NodeSoaking, monday).Driver(true, pt.Target).Build()}
	soaking[0].Owner = "r"
	done := planner.Transition{Node: "gpu-00", From: v1alpha1.NodeSoaking, To: v1alpha1.NodeDone, Reason: "soaked", Uncordon: true}
	older := planner.Peer{Name: "older", Created: monday.Add(-time.Hour), NodeSelector: ro.Spec.NodeSelector}
	released := []planner.Node{pt.Node("gpu-00").Cordoned().Build()}
	tests := []struct {
		name string
		step sim.Step
		want string
	}{
		{"moves another live rollout's node", sim.Step{Rollout: ro, Before: owned("s"), After: after(owned("s"), start), Truth: owned("s"),
			Others: []planner.Peer{{Name: "s"}}, Result: planner.Result{Transitions: []planner.Transition{start}}}, "belongs to rollout s"},
		{"a node whose owner is gone is free", sim.Step{Rollout: ro, Before: owned(""), After: after(owned(""), start), Truth: owned("gone"),
			Result: planner.Result{Transitions: []planner.Transition{start}}}, ""},
		{"started twice", sim.Step{Rollout: ro, Before: pt.Nodes("gpu", 2), After: after(pt.Nodes("gpu", 2), start),
			Truth: after(pt.Nodes("gpu", 2), start), Result: planner.Result{Transitions: []planner.Transition{start}}}, "it was Draining already"},
		{"starts a node an older rollout goes first on", sim.Step{Rollout: ro, Before: pt.Nodes("gpu", 2), After: after(pt.Nodes("gpu", 2), start),
			Others: []planner.Peer{older}, Result: planner.Result{Transitions: []planner.Transition{start}}}, "the older rollout older selects too"},
		{"lifts an admin's cordon", sim.Step{Rollout: ro, Before: soaking, After: after(soaking, done),
			CordonsBefore: map[string]string{"gpu-00": "admin"}, Result: planner.Result{Transitions: []planner.Transition{done}}}, "uncordoned gpu-00, whose cordon an admin holds"},
		{"moves an admin-cordoned node without the mark", sim.Step{Rollout: ro, Before: cordoned,
			After:         after(cordoned, planner.Transition{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Reason: "started"}),
			CordonsBefore: map[string]string{"gpu-00": "admin"},
			Result:        planner.Result{Transitions: []planner.Transition{{Node: "gpu-00", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Reason: "started"}}}},
			"without recording it"},
		{"a release that drops the mark", sim.Step{Rollout: ro, Released: []string{"gpu-00"},
			Before: []planner.Node{pt.Node("gpu-00").AdminCordoned().Build()}, After: released,
			CordonsBefore: map[string]string{"gpu-00": "admin"}}, "dropped the admin-cordon mark"},
		{"a release that uncordons", sim.Step{Rollout: ro, Released: []string{"gpu-00"},
			Before: soaking, After: pt.Nodes("gpu", 1),
			CordonsBefore: map[string]string{"gpu-00": "r"}}, "deleting r uncordoned gpu-00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := simcheck.NewChecker()
			tt.step.At = monday
			c.Step(tt.step)
			got := strings.Join(c.Violations(), "\n")
			if tt.want == "" {
				if got != "" {
					t.Errorf("violations: %s", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("violations %q do not mention %q", got, tt.want)
			}
		})
	}
}
