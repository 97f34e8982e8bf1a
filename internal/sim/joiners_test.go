package sim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// addJoiners adds to a random configuration nodes that come and go during
// the rollout, as autoscalers, repairs and new racks make them: new nodes
// that register with their pool's labels and no driver label (most with
// no driver at all, some already running the previous or the target driver,
// as a node of an adopted fleet does), and nodes that leave the cluster
// mid-rollout, in whatever phase they are, some coming back later as new
// nodes. It draws from its own generator, so the rest of the configuration
// is what it was before joiners existed.
func addJoiners(seed uint64, cfg *sim.Config) {
	r := rand.New(rand.NewPCG(seed, 27))
	if r.IntN(3) == 0 {
		return
	}
	at := func() time.Duration { return time.Duration(r.IntN(72*60)) * time.Minute }
	pool := map[string]string{pt.PoolKey: pt.Pool}
	present := len(cfg.Nodes)
	for k := range r.IntN(4) {
		// Not in the cluster yet: no labels, so no rollout selects it.
		name := fmt.Sprintf("gpu-9%d", k)
		cfg.Nodes = append(cfg.Nodes, planner.Node{Name: name, Labels: map[string]string{}, Ready: true})
		driver := ""
		switch r.IntN(10) {
		case 0, 1:
			driver = pt.Previous
		case 2:
			driver = pt.Target
		}
		cfg.Script = append(cfg.Script, sim.Event{At: at(), Do: func(w *sim.World) { w.Join(name, pool, driver) }})
	}
	for range r.IntN(3) {
		name := cfg.Nodes[r.IntN(present)].Name
		leave := at()
		cfg.Script = append(cfg.Script, sim.Event{At: leave, Do: func(w *sim.World) { w.Leave(name) }})
		if r.IntN(2) == 0 {
			back := leave + time.Duration(1+r.IntN(6))*time.Hour
			cfg.Script = append(cfg.Script, sim.Event{At: back, Do: func(w *sim.World) { w.Join(name, pool, "") }})
		}
	}
}

// joinCoverage counts what the joining nodes of the randomized runs
// reached, so a generator that stopped producing them is noticed.
type joinCoverage struct {
	joined, joinedTarget, joinedPrevious, joinedRunning int
}

func (c *joinCoverage) observe(s sim.Step) {
	before := map[string]*planner.Node{}
	for i := range s.Before {
		before[s.Before[i].Name] = &s.Before[i]
	}
	for _, t := range s.Result.Transitions {
		if !t.Join {
			continue
		}
		c.joined++
		switch b := before[t.Node]; {
		case b != nil && b.DriverVersion != "":
			c.joinedRunning++
		case t.Driver == s.Rollout.Spec.TargetVersion && t.Driver != s.Rollout.Spec.PreviousVersion:
			c.joinedTarget++
		case t.Driver == s.Rollout.Spec.PreviousVersion:
			c.joinedPrevious++
		}
	}
}

// phaseOfJoiner is the phase a joined node is in at the end, for the tests
// that look at one joiner.
func phaseOfJoiner(res *sim.Result, name string) v1alpha1.NodePhase {
	for _, n := range res.Nodes {
		if n.Name == name {
			return n.Phase
		}
	}
	return ""
}

// joinBreaks are broken planners for TestInvariantsCatchBrokenPlanners that
// break the rules of nodes coming and going: brk turns a configuration the
// real planner runs cleanly into one that must be caught.
func joinBreaks() []struct {
	name string
	cfg  func() sim.Hooked
	brk  func(*sim.Hooked)
} {
	pool := map[string]string{pt.PoolKey: pt.Pool}
	plan := func(fn sim.PlanFunc) func(*sim.Hooked) { return func(c *sim.Hooked) { c.Plan = fn } }
	// A canary that passes and waits for an approval nobody gives, and a
	// new node (gpu-90, no driver) that registers meanwhile.
	joiner := func() sim.Hooked {
		nodes := append(pt.Nodes("gpu", 4), planner.Node{Name: "gpu-90", Labels: map[string]string{}, Ready: true})
		return sim.Hooked{Config: sim.Config{Rollout: pt.Rollout("r").Canary(1).Build(), Nodes: nodes, Start: monday, Profile: steady(),
			Script: []sim.Event{{At: 3 * time.Hour, Do: func(w *sim.World) { w.Join("gpu-90", pool, "") }}}}}
	}
	// The same canary, approved later, whose node leaves the cluster
	// before it is through.
	leaver := func() sim.Hooked {
		return sim.Hooked{Config: sim.Config{Rollout: pt.Rollout("r").Canary(1).Approved().Build(), Nodes: pt.Nodes("gpu", 4), Start: monday, Profile: steady(),
			Script: []sim.Event{{At: 5 * time.Minute, Do: func(w *sim.World) { w.Leave("gpu-00") }}}}}
	}
	return []struct {
		name string
		cfg  func() sim.Hooked
		brk  func(*sim.Hooked)
	}{
		{"gives a new node the unproven driver", joiner, plan(func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				if t := &r.Transitions[i]; t.Join {
					t.Driver = s.Rollout.Spec.TargetVersion
				}
			}
			return r
		})},
		{"joins a node with a move", joiner, plan(func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				if t := &r.Transitions[i]; t.Join {
					t.Cordon = true
				}
			}
			return r
		})},
		{"forgets its canary when the canary node leaves", leaver, plan(func(s planner.Snapshot, now time.Time) planner.Result {
			// As the planner did before nodes could leave: a canary no
			// longer found is no canary at all.
			for _, name := range s.Rollout.Status.Canary.Nodes {
				if !slices.ContainsFunc(s.Nodes, func(n planner.Node) bool { return n.Name == name && n.Labels[pt.PoolKey] == pt.Pool }) {
					ro := s.Rollout.DeepCopy()
					ro.Status.Canary = v1alpha1.CanaryStatus{}
					ro.Spec.Canary = v1alpha1.CanarySpec{}
					s.Rollout = ro
					break
				}
			}
			return planner.Plan(s, now)
		})},
	}
}
