package sim_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// withDomains groups the nodes of a random configuration into maintenance
// domains of up to four nodes (NVLink domains, by nvidia.com/gpu.clique),
// in name order, a few nodes left without the label, and makes the rollout
// maintain them as units: maxNodes the largest, and parallelNodes and a
// count of maxUnavailable raised to it, as the schema asks (a percentage is
// left as drawn: a domain it cannot fit waits, as the planner says).
func withDomains(cfg sim.Hooked, seed uint64) sim.Hooked {
	r := rand.New(rand.NewPCG(seed, 99))
	size := 2 + r.IntN(3)
	for i := range cfg.Nodes {
		n := &cfg.Nodes[i]
		if len(n.Labels) == 0 || r.IntN(10) == 0 {
			continue // a node not in the cluster yet, or of no domain
		}
		n.Labels = maps.Clone(n.Labels)
		n.Labels[pt.CliqueLabel] = fmt.Sprintf("nvl-%d", i/size)
	}
	ro := cfg.Rollout.DeepCopy()
	spec := &ro.Spec
	spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: pt.CliqueLabel, MaxNodes: int32(size)}
	spec.ParallelNodes = max(spec.ParallelNodes, int32(size))
	if mu := spec.MaxUnavailable; mu == nil || mu.Type == intstr.Int {
		v := intstr.FromInt32(int32(size))
		if mu != nil && mu.IntVal > int32(size) {
			v = *mu
		}
		spec.MaxUnavailable = &v
	}
	cfg.Rollout = ro
	return cfg
}

// domainCoverage counts what the domain runs reached.
type domainCoverage struct {
	// starts: passes that started a domain of several nodes; rollbacks:
	// nodes sent back with their domain; returns: nodes that went back
	// into service with their domain.
	starts, rollbacks, returns int
}

func (c *domainCoverage) observe(s sim.Step) {
	if s.Released != nil {
		return
	}
	multi := false
	for _, t := range s.Result.Transitions {
		switch {
		case strings.Contains(t.Reason, "starting as one"):
			multi = true
		case strings.Contains(t.Reason, "the domain rolls back as one"):
			c.rollbacks++
		case strings.Contains(t.Reason, "returns as one"):
			c.returns++
		}
	}
	if multi {
		c.starts++
	}
}

// TestDomainInvariantsRandomized runs the random rollouts of
// TestInvariantsRandomized (failures, XIDs, NotReady nodes, admins,
// windows, rival rollouts, racing controllers, joining nodes) over nodes in
// maintenance domains, and checks every invariant that holds without them
// and the domains' own: a domain starts whole, returns whole, and never
// ends half upgraded.
func TestDomainInvariantsRandomized(t *testing.T) {
	n := seeds(t)
	var cov domainCoverage
	for seed := range uint64(n) {
		mustHoldInvariants(t, seed, withDomains(randomConfigWith(seed, true), seed), cov.observe)
	}
	if n >= 200 && (cov.starts == 0 || cov.rollbacks == 0 || cov.returns == 0) {
		t.Errorf("the domain runs reached too little: %+v", cov)
	}
	t.Logf("%d runs: %+v", n, cov)
}

// TestDomainInvariantsCatchABlindPlanner proves the domain rules can fail:
// a planner that is not told of the domains moves their nodes one by one,
// and the checker must say so.
func TestDomainInvariantsCatchABlindPlanner(t *testing.T) {
	blind := func(snap planner.Snapshot, now time.Time) planner.Result {
		ro := snap.Rollout.DeepCopy()
		ro.Spec.MaintenanceDomain = nil
		snap.Rollout = ro
		return planner.Plan(snap, now)
	}
	caught := 0
	for seed := range uint64(40) {
		cfg := withDomains(randomConfig(seed), seed)
		cfg.Plan = blind
		if len(runChecked(t, cfg)) > 0 {
			caught++
		}
	}
	if caught < 20 {
		t.Errorf("a planner blind to maintenance domains was caught in %d of 40 runs", caught)
	}
}
