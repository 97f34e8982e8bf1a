package planner_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// domain builds nodes prefix-0 … prefix-(n-1) of maintenance domain key,
// each edited by edit (nil: left as built).
func domain(key string, n int, edit func(i int, b *pt.NodeBuilder)) []*pt.NodeBuilder {
	var out []*pt.NodeBuilder
	for i := range n {
		b := pt.Node(fmt.Sprintf("%s-%d", key, i)).InDomain(key)
		if edit != nil {
			edit(i, b)
		}
		out = append(out, b)
	}
	return out
}

// moved lists "node From→To" of each transition, and whether it records a
// failure, in the planner's order.
func moved(r planner.Result) []string {
	out := []string{}
	for _, t := range r.Transitions {
		s := fmt.Sprintf("%s %s→%s", t.Node, t.From, t.To)
		if t.Failure {
			s += " failure"
		}
		out = append(out, s)
	}
	return out
}

// messages joins the status's condition messages.
func messages(r planner.Result) string {
	var ms []string
	for _, c := range r.Status.Conditions {
		ms = append(ms, c.Message)
	}
	return strings.Join(ms, " | ")
}

func domains(rollout *pt.RolloutBuilder) *pt.RolloutBuilder {
	return rollout.Domains(pt.CliqueLabel, 4)
}

// TestDomainStartsAsOne: a domain's pending nodes start in one pass, taking a
// slot and a unit of maxUnavailable each; one that does not fit waits whole
// while a node of no domain takes the slot left.
func TestDomainStartsAsOne(t *testing.T) {
	nodes := slices.Concat(domain("a", 4, nil), domain("b", 4, nil), []*pt.NodeBuilder{pt.Node("c-0")})
	r := planOnce(domains(pt.Rollout("r").Parallel(5).MaxUnavailable(5)), nodes)
	want := []string{"a-0 Pending→Draining", "a-1 Pending→Draining", "a-2 Pending→Draining", "a-3 Pending→Draining", "c-0 Pending→Draining"}
	if diff := cmp.Diff(want, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	for _, tr := range r.Transitions[:4] {
		if !tr.Cordon || !strings.Contains(tr.Reason, "of maintenance domain a (4 nodes, starting as one)") {
			t.Errorf("%s: cordon %t, reason %q", tr.Node, tr.Cordon, tr.Reason)
		}
	}

	// With a node out already, the domain does not fit: none of it starts.
	nodes = slices.Concat(domain("a", 4, nil), []*pt.NodeBuilder{pt.Node("c-0").NotReady()})
	r = planOnce(domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4)), nodes)
	if got := moved(r); len(got) != 0 {
		t.Errorf("a domain of 4 started beside a NotReady node under maxUnavailable 4: %v", got)
	}
	if m := messages(r); !strings.Contains(m, "maxUnavailable 4") {
		t.Errorf("status does not say why the domain waits: %s", m)
	}
}

// TestDomainWaits: a domain waits whole, and says why, while a node of it is
// NotReady, while it is larger than maxNodes or than maxUnavailable resolves
// to, and while a node of it is still in flight.
func TestDomainWaits(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rollout *pt.RolloutBuilder
		nodes   []*pt.NodeBuilder
		want    string
	}{
		{
			name:    "a NotReady node",
			rollout: domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4)),
			nodes: domain("a", 4, func(i int, b *pt.NodeBuilder) {
				if i == 2 {
					b.NotReady()
				}
			}),
			want: "maintenance domain a: node a-2 NotReady or out of service",
		},
		{
			name:    "more nodes than maxNodes",
			rollout: domains(pt.Rollout("r").Parallel(8).MaxUnavailable(8)),
			nodes:   domain("a", 5, nil),
			want:    "maintenance domain a has 5 nodes, more than maintenanceDomain.maxNodes 4",
		},
		{
			name:    "a percentage of maxUnavailable below the domain",
			rollout: domains(pt.Rollout("r").Parallel(4).MaxUnavailablePercent("10%")),
			nodes:   domain("a", 4, nil),
			want:    "maintenance domain a: 4 nodes to take out as one, more than maxUnavailable 1",
		},
		{
			name:    "a node rolling back",
			rollout: domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Budget(2)),
			nodes: domain("a", 4, func(i int, b *pt.NodeBuilder) {
				if i == 0 {
					b.In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed().Driver(false, "")
				}
			}),
			want: "maintenance domain a: node a-0 rolling back",
		},
		{
			name:    "a domain rolled back",
			rollout: domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Budget(2)),
			nodes: domain("a", 4, func(i int, b *pt.NodeBuilder) {
				if i == 0 {
					b.In(v1alpha1.NodeRolledBack, ago(time.Minute))
				}
			}),
			want: "maintenance domain a rolled back (node a-0 RolledBack): its other nodes stay on " + pt.Previous,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := planOnce(tt.rollout, tt.nodes)
			for _, tr := range r.Transitions {
				if tr.To == v1alpha1.NodeDraining {
					t.Errorf("%s started", tr.Node)
				}
			}
			if m := messages(r); !strings.Contains(m, tt.want) {
				t.Errorf("status %q does not say %q", m, tt.want)
			}
		})
	}
}

// TestDomainCatchesUp: a pending node of a domain already on its way (one
// that joined it, or one a refused write left behind) starts at once, and
// the domain's return waits for it. (Once the others are through, they do
// not wait for it: it goes alone after them.)
func TestDomainCatchesUp(t *testing.T) {
	nodes := domain("a", 3, func(i int, b *pt.NodeBuilder) {
		if i < 2 {
			b.In(v1alpha1.NodeSoaking, ago(10*time.Minute)).Driver(true, pt.Target)
		}
	})
	r := planOnce(domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Soak(time.Hour)), nodes)
	if diff := cmp.Diff([]string{"a-2 Pending→Draining"}, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestDomainCanary: the canary is a whole domain, recorded by name in the
// status so it never moves.
func TestDomainCanary(t *testing.T) {
	nodes := slices.Concat(domain("a", 4, nil), domain("b", 4, nil))
	r := planOnce(domains(pt.Rollout("r").Canary(1).Parallel(4).MaxUnavailable(4)), nodes)
	want := []string{"a-0 Pending→Draining", "a-1 Pending→Draining", "a-2 Pending→Draining", "a-3 Pending→Draining"}
	if diff := cmp.Diff(want, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if got := r.Status.Canary.Nodes; !slices.Equal(got, []string{"a-0", "a-1", "a-2", "a-3"}) {
		t.Errorf("canary nodes %v, want domain a", got)
	}
}

// TestDomainRollsBackAsOne: a node that fails rolls its domain back: it
// counts against the budget, the others do not, and every other node of the
// domain on its way to the new driver goes back too, in the same pass.
func TestDomainRollsBackAsOne(t *testing.T) {
	phases := []v1alpha1.NodePhase{v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeSoaking, v1alpha1.NodeValidating}
	nodes := domain("a", 4, func(i int, b *pt.NodeBuilder) {
		b.In(phases[i], ago(time.Minute))
		if i == 1 {
			b.DriverFailed()
		}
	})
	r := planOnce(domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Budget(3)), nodes)
	want := []string{"a-0 Draining→RollingBack", "a-1 Installing→RollingBack failure", "a-2 Soaking→RollingBack", "a-3 Validating→RollingBack"}
	if diff := cmp.Diff(want, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	for _, tr := range r.Transitions {
		if tr.Driver != pt.Previous {
			t.Errorf("%s rolls back to %q, want %s", tr.Node, tr.Driver, pt.Previous)
		}
		if tr.Node != "a-1" && !strings.Contains(tr.Reason, "node a-1 of maintenance domain a driver "+pt.Target+" failed to install") {
			t.Errorf("%s: reason %q does not name the failed node", tr.Node, tr.Reason)
		}
	}
	if r.Status.BudgetUsed != 1 {
		t.Errorf("budget used %d, want 1: only the failed node counts", r.Status.BudgetUsed)
	}

	// A failure written in an earlier pass without the others' rollback
	// (the controller stopped between patches) rolls them back now.
	nodes = domain("a", 2, func(i int, b *pt.NodeBuilder) {
		if i == 0 {
			b.In(v1alpha1.NodeRollingBack, ago(time.Minute)).Failed()
			return
		}
		b.In(v1alpha1.NodeSoaking, ago(time.Minute)).Driver(true, pt.Target)
	})
	r = planOnce(domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Budget(3)), nodes)
	if diff := cmp.Diff([]string{"a-1 Soaking→RollingBack"}, moved(r)); diff != "" {
		t.Errorf("after an unwritten domain rollback (-want +got):\n%s", diff)
	}
}

// TestDomainReturnsAsOne: no node of a domain goes back into service while
// another is on its way; the last to finish releases them all at once, Done
// or rolled back alike.
func TestDomainReturnsAsOne(t *testing.T) {
	rollout := domains(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Soak(time.Hour))
	soaked := func(last time.Duration) []*pt.NodeBuilder {
		return domain("a", 3, func(i int, b *pt.NodeBuilder) {
			since := ago(2 * time.Hour)
			if i == 2 {
				since = ago(last)
			}
			b.In(v1alpha1.NodeSoaking, since).Driver(true, pt.Target)
		})
	}
	held := planOnce(rollout, soaked(10*time.Minute))
	if got := moved(held); len(got) != 0 {
		t.Errorf("nodes returned while a-2 still soaks: %v", got)
	}
	if m := messages(held); !strings.Contains(m, "2 nodes through, held for the rest of maintenance domain a") {
		t.Errorf("the status does not say who is held: %s", m)
	}
	r := planOnce(rollout, soaked(time.Hour))
	want := []string{"a-0 Soaking→Done", "a-1 Soaking→Done", "a-2 Soaking→Done"}
	if diff := cmp.Diff(want, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	for _, tr := range r.Transitions {
		if !tr.Uncordon || !strings.Contains(tr.Reason, "maintenance domain a returns as one (3 nodes)") {
			t.Errorf("%s: uncordon %t, reason %q", tr.Node, tr.Uncordon, tr.Reason)
		}
	}

	back := func(second bool) []*pt.NodeBuilder {
		return domain("a", 2, func(i int, b *pt.NodeBuilder) {
			b.In(v1alpha1.NodeRollingBack, ago(time.Minute))
			if i == 0 || second {
				b.Driver(true, pt.Previous)
			} else {
				b.Driver(false, "")
			}
		})
	}
	if got := moved(planOnce(rollout, back(false))); len(got) != 0 {
		t.Errorf("a node returned while a-1 still rolls back: %v", got)
	}
	if diff := cmp.Diff([]string{"a-0 RollingBack→RolledBack", "a-1 RollingBack→RolledBack"}, moved(planOnce(rollout, back(true)))); diff != "" {
		t.Errorf("rolled back (-want +got):\n%s", diff)
	}
}

// TestDomainCheapestFirst: the domain whose nodes hold the least GPU work
// goes first, by the sum over its nodes.
func TestDomainCheapestFirst(t *testing.T) {
	nodes := slices.Concat(
		domain("a", 2, func(i int, b *pt.NodeBuilder) { b.GPUWork(1, 2) }),
		domain("b", 2, func(i int, b *pt.NodeBuilder) {
			if i == 0 {
				b.GPUWork(1, 3)
			}
		}),
	)
	r := planOnce(pt.Rollout("r").Domains(pt.CliqueLabel, 2).Parallel(2).MaxUnavailable(2), nodes)
	if diff := cmp.Diff([]string{"b-0 Pending→Draining", "b-1 Pending→Draining"}, moved(r)); diff != "" {
		t.Errorf("domain b (3 GPU-hours) should go before a (4) (-want +got):\n%s", diff)
	}
}

// TestDomainNeedsTheGPUFleetActuator: on the operator's path a domain is
// refused, as the schema refuses it.
func TestDomainNeedsTheGPUFleetActuator(t *testing.T) {
	r := planOnce(domains(pt.Rollout("r").Actuator(v1alpha1.ActuatorGPUOperator).Parallel(4).MaxUnavailable(4)), domain("a", 4, nil))
	if len(r.Transitions) != 0 || r.Status.Phase != v1alpha1.PhaseStalled || !strings.Contains(messages(r), "spec.maintenanceDomain needs the gpufleet actuator") {
		t.Errorf("phase %s, %v: %s", r.Status.Phase, moved(r), messages(r))
	}
}
