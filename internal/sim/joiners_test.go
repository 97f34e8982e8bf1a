package sim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
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
	pool := map[string]string{v1alpha1.LabelPool: pt.Pool}
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

// joinBreaks are broken planners for TestInvariantsCatchBrokenPlanners that
// break the rules of nodes coming and going: brk turns a configuration the
// real planner runs cleanly into one that must be caught.
func joinBreaks() []struct {
	name string
	cfg  func() sim.Hooked
	brk  func(*sim.Hooked)
} {
	pool := map[string]string{v1alpha1.LabelPool: pt.Pool}
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
	// Two pools of one product told apart by the MIG layout; a node joins
	// with the MIG pool's layout.
	pooled := func() sim.Hooked {
		const product, mig = "nvidia.com/gpu.product", "nvidia.com/mig.config"
		ro := pt.Rollout("r").Build()
		ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{product: "A100"}}
		ro.Spec.Pools = []v1alpha1.PoolSpec{
			{Name: "a100-mig", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{mig: "all-1g.10gb"}}},
			{Name: "a100", NodeSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: mig, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"all-1g.10gb"}}}}},
		}
		nodes := []planner.Node{{Name: "gpu-00", Labels: map[string]string{product: "A100", v1alpha1.LabelDriver: pt.Previous, v1alpha1.LabelPool: "a100"}, Ready: true, DriverReady: true, DriverVersion: pt.Previous},
			{Name: "new-0", Labels: map[string]string{}, Ready: true}}
		return sim.Hooked{Config: sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Profile: steady(),
			Script: []sim.Event{{At: time.Hour, Do: func(w *sim.World) { w.Join("new-0", map[string]string{product: "A100", mig: "all-1g.10gb"}, "") }}}}}
	}
	return []struct {
		name string
		cfg  func() sim.Hooked
		brk  func(*sim.Hooked)
	}{
		{"puts a joiner in a pool that does not select it", pooled, plan(func(s planner.Snapshot, now time.Time) planner.Result {
			r := planner.Plan(s, now)
			for i := range r.Transitions {
				if t := &r.Transitions[i]; t.Pool != "" {
					t.Pool = "a100"
				}
			}
			return r
		})},
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
				if !slices.ContainsFunc(s.Nodes, func(n planner.Node) bool { return n.Name == name && n.Labels[v1alpha1.LabelPool] == pt.Pool }) {
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

// TestInvariantsPoolJoins: random rollouts over every node of a GPU product
// whose two pools tell their nodes apart by the pool label (a MIG pool and
// a plain one, as render writes spec.pools for pools that share a product),
// with nodes joining without any gpufleet label, some with the MIG layout
// label, some with a label matching both pools or neither, and nodes
// leaving: every invariant holds, and a joiner gets the one pool whose
// selector matches it, or none.
func TestInvariantsPoolJoins(t *testing.T) {
	const product, mig = "nvidia.com/gpu.product", "nvidia.com/mig.config"
	n := seeds(t) / 4
	pooled := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 29))
		ro := randomPolicy(r, "p"+strconv.FormatUint(seed, 10)).Build()
		ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{product: "A100"}}
		ro.Spec.Pools = []v1alpha1.PoolSpec{
			{Name: "a100-mig", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{product: "A100", mig: "all-1g.10gb"}}},
			{Name: "a100", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{product: "A100"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: mig, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"all-1g.10gb"}}}}},
		}
		if r.IntN(3) == 0 {
			// A third pool overlapping the MIG one: a node both select is
			// nobody's to guess.
			ro.Spec.Pools = append(ro.Spec.Pools, v1alpha1.PoolSpec{Name: "a100-any", NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{mig: "all-1g.10gb"}}})
		}
		var nodes []planner.Node
		for i := range 3 + r.IntN(8) {
			l := map[string]string{product: "A100", v1alpha1.LabelDriver: pt.Previous, v1alpha1.LabelPool: "a100"}
			nodes = append(nodes, planner.Node{Name: fmt.Sprintf("gpu-%02d", i), Labels: l, Ready: true, DriverReady: true, DriverVersion: pt.Previous})
		}
		var script []sim.Event
		for k := range 1 + r.IntN(4) {
			name := fmt.Sprintf("new-%d", k)
			nodes = append(nodes, planner.Node{Name: name, Labels: map[string]string{}, Ready: true})
			l := map[string]string{product: "A100"}
			switch r.IntN(3) {
			case 0:
				l[mig] = "all-1g.10gb"
			case 1:
				l[mig] = "all-disabled"
			}
			driver := ""
			if r.IntN(4) == 0 {
				driver = pt.Previous
			}
			script = append(script, sim.Event{At: time.Duration(r.IntN(48*60)) * time.Minute, Do: func(w *sim.World) { w.Join(name, l, driver) }})
		}
		cfg := sim.Hooked{Config: sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: seed, Profile: steady(), Script: script, ApproveWhenAsked: true}}
		check := simcheck.NewChecker()
		cfg.Observe = func(s sim.Step) {
			check.Step(s)
			for _, tr := range s.Result.Transitions {
				if tr.Pool != "" {
					pooled++
				}
			}
		}
		res, err := sim.RunHooked(cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		finalAll(check, res)
		if v := check.Violations(); len(v) > 0 {
			t.Fatalf("seed %d: %d invariant violations, first: %s", seed, len(v), v[0])
		}
	}
	if pooled == 0 {
		t.Fatal("no joiner was given a pool: the test checks nothing")
	}
	t.Logf("%d runs; %d pool labels given", n, pooled)
}
