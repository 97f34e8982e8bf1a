package sim_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

// addRivals adds to a random configuration what issue 16 found broken:
// nodes already on the target (settled Done, cordoned or not), more
// DriverRollouts over the same nodes (the same pool, a superset, another
// pool), created with the first or later, some deleted mid-way (with their
// finalizer, or by force), and passes that race (plan from the same moment,
// write with a precondition). It draws from its own generator, so the rest
// of the configuration is what it was before rivals existed.
func addRivals(seed uint64, cfg *sim.Hooked) {
	r := rand.New(rand.NewPCG(seed, 16))
	for i := range cfg.Nodes {
		n := &cfg.Nodes[i]
		if r.IntN(8) == 0 {
			// Already on the target: settled Done without a drain. When
			// it is cordoned too, that cordon is an admin's to keep.
			pt.RunsDriver(n, pt.Target)
			if r.IntN(2) == 0 {
				n.Unschedulable = true
			}
		}
	}
	cfg.Racing = r.IntN(2) == 0
	at := func() time.Duration { return time.Duration(r.IntN(48*60)) * time.Minute }
	rivals := r.IntN(3)
	for k := range rivals {
		// A name before or after the first rollout's, so created together
		// either may go first.
		name := fmt.Sprintf("%s-%d", cfg.Rollout.Name, k)
		if r.IntN(2) == 0 {
			name = "a" + strconv.FormatUint(seed, 10) + "-" + strconv.Itoa(k)
		}
		b := pt.Rollout(name).
			Parallel(int32(1+r.IntN(3))).
			MaxUnavailable(int32(1+r.IntN(3))).
			Budget(int32(r.IntN(3))).
			Soak(time.Duration(5+r.IntN(40))*time.Minute).
			Timeouts(30*time.Minute, 20*time.Minute, 10*time.Minute)
		if r.IntN(2) == 0 {
			b.Canary(1)
			if r.IntN(3) > 0 {
				b.Approved()
			}
		}
		ro := b.Build()
		if r.IntN(3) == 0 {
			ro.Spec.TargetVersion = "590.10.01"
		}
		// The cluster has one NicClusterPolicy: every rollout of it
		// that moves OFED moves it to the same version.
		ro.Spec.OFED = cfg.Rollout.Spec.OFED.DeepCopy()
		switch r.IntN(3) {
		case 0: // the same pool
		case 1: // a superset: both pools
			ro.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: v1alpha1.LabelPool, Operator: metav1.LabelSelectorOpIn, Values: []string{pt.Pool, "a100"},
			}}}
		case 2: // another pool: no overlap
			ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPool: "a100"}}
		}
		created := time.Duration(0)
		if r.IntN(2) == 0 {
			created = at()
		}
		cfg.Script = append(cfg.Script, sim.Event{At: created, Do: func(w *sim.World) { w.Create(ro) }})
		deleteLater(r, &cfg.Config, name, created)
	}
	if rivals > 0 {
		deleteLater(r, &cfg.Config, cfg.Rollout.Name, 0)
	}
}

// deleteLater deletes rollout name at a random time after created, now and
// then, with its finalizer or by force.
func deleteLater(r *rand.Rand, cfg *sim.Config, name string, created time.Duration) {
	if r.IntN(4) != 0 {
		return
	}
	when := created + time.Duration(1+r.IntN(24*60))*time.Minute
	if r.IntN(3) == 0 {
		cfg.Script = append(cfg.Script, sim.Event{At: when, Do: func(w *sim.World) { w.ForceDelete(name) }})
		return
	}
	cfg.Script = append(cfg.Script, sim.Event{At: when, Do: func(w *sim.World) { w.Delete(name) }})
}

// finalAll runs the end-of-run checks for every rollout still alive.
func finalAll(check *simcheck.Checker, res *sim.Result) {
	for _, ro := range res.Rollouts {
		check.Final(ro, res.ViewOf(ro.Name))
	}
}

// coverage counts what the randomized runs reached, so a generator that
// stopped producing overlaps, races or settles is noticed.
type coverage struct {
	overlaps, refused, released, settledCordoned int
}

func (c *coverage) observe(s sim.Step) {
	if s.Released != nil {
		c.released += len(s.Released)
		return
	}
	c.refused += s.Refused
	for _, cond := range s.Result.Status.Conditions {
		if cond.Type == v1alpha1.ConditionOverlap && cond.Status == metav1.ConditionTrue {
			c.overlaps++
		}
	}
	for _, t := range s.Result.Transitions {
		if t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeDone && t.RecordAdminCordon {
			c.settledCordoned++
		}
	}
}

// tee feeds one step to several observers.
func tee(fns ...func(sim.Step)) func(sim.Step) {
	return func(s sim.Step) {
		for _, fn := range fns {
			fn(s)
		}
	}
}

// rivalBreaks are broken planners and worlds for
// TestInvariantsCatchBrokenPlanners that break the rules between rollouts
// and between controllers: brk turns a configuration the real planner runs
// cleanly into one that must be caught.
func rivalBreaks() []struct {
	name string
	cfg  func() sim.Hooked
	brk  func(*sim.Hooked)
} {
	two := func(racing bool) func() sim.Hooked {
		return func() sim.Hooked {
			ro := pt.Rollout("r").MaxUnavailable(3).Parallel(3).Build()
			other := pt.Rollout("s").MaxUnavailable(3).Parallel(3).Build()
			return sim.Hooked{Config: sim.Config{
				Rollout: ro, Nodes: pt.Nodes("gpu", 6), Start: monday, Profile: steady(),
				Script: []sim.Event{{Do: func(w *sim.World) { w.Create(other) }}},
			}, Hooks: sim.Hooks{Racing: racing}}
		}
	}
	plan := func(fn sim.PlanFunc) func(*sim.Hooked) { return func(c *sim.Hooked) { c.Plan = fn } }
	settleCordoned := func() sim.Hooked {
		nodes := pt.Nodes("gpu", 3)
		pt.RunsDriver(&nodes[1], pt.Target)
		nodes[1].Unschedulable = true
		return sim.Hooked{Config: sim.Config{Rollout: pt.Rollout("r").Build(), Nodes: nodes, Start: monday, Profile: steady()}}
	}
	return []struct {
		name string
		cfg  func() sim.Hooked
		brk  func(*sim.Hooked)
	}{
		{"moves another rollout's nodes", two(false), plan(func(s planner.Snapshot, now time.Time) planner.Result {
			nodes := append([]planner.Node(nil), s.Nodes...)
			for i := range nodes {
				nodes[i].Owner = ""
			}
			s.Nodes, s.Others = nodes, nil
			return planner.Plan(s, now)
		})},
		{"races without a precondition", two(true), func(c *sim.Hooked) { c.Unlocked = true }},
		{"forgets an admin's cordon when settling", settleCordoned, plan(func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				if r.Transitions[i].To == v1alpha1.NodeDone && r.Transitions[i].From == v1alpha1.NodePending {
					r.Transitions[i].RecordAdminCordon = false
				}
			}
			return r
		})},
		{"hides the overlap", two(false), plan(func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			conds := r.Status.Conditions[:0:0]
			for _, c := range r.Status.Conditions {
				if c.Type != v1alpha1.ConditionOverlap {
					conds = append(conds, c)
				}
			}
			r.Status.Conditions = conds
			return r
		})},
	}
}
