package sim_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// withWorkload runs GPU jobs on a random configuration's nodes
// (sim.DefaultWorkload at a random utilization, its jobs of several nodes
// spanning a maintenance domain where the nodes have domains), so the
// planner sees GPU pods and starts the cheapest nodes first, and, one run
// in two, makes the rollout wait for one kind of job for a random time,
// so that drains wait. It draws from a stream of its own: the rest of the
// configuration is the one the seed always drew.
func withWorkload(cfg sim.Hooked, seed uint64) sim.Hooked {
	r := rand.New(rand.NewPCG(seed, 1234))
	present, domains := 0, false
	for _, n := range cfg.Nodes {
		if len(n.Labels) > 0 {
			present++
			domains = domains || n.Labels[v1alpha1.LabelGFDClique] != ""
		}
	}
	label := ""
	if domains && cfg.Rollout.Spec.MaintenanceDomain != nil {
		label = v1alpha1.LabelGFDClique
	}
	w := sim.DefaultWorkload(present, label)
	w.Utilization = 0.3 + 0.7*r.Float64()
	w.GPUsPerNode = []int{4, 8}[r.IntN(2)]
	if w.GPUsPerNode == 4 {
		w.Mix[0].GPUs = []int{1, 2, 4}
	}
	cfg.Workload = w
	if r.IntN(2) == 0 {
		ro := cfg.Rollout.DeepCopy()
		kind := []string{"batch", "training"}[r.IntN(2)]
		timeout := time.Duration(10+r.IntN(240)) * time.Minute
		ro.Spec.Evict.WaitForCompletion = &v1alpha1.WaitForCompletion{Timeout: metav1.Duration{Duration: timeout}}
		ro.Spec.Evict.WaitForCompletion.PodSelector.MatchLabels = sim.JobKind(kind)
		cfg.Rollout = ro
	}
	return cfg
}

// workloadCoverage counts what the runs with jobs reached.
type workloadCoverage struct {
	// costOrdered: passes that started a node by its GPU work; waited:
	// drains that waited for jobs; spared: jobs that finished while a
	// drain waited; interrupted: jobs a drain evicted.
	costOrdered, waited, spared, interrupted int
}

func (c *workloadCoverage) observe(s sim.Step) {
	if s.Released != nil {
		return
	}
	for _, t := range s.Result.Transitions {
		if strings.Contains(t.Reason, "GPU-hours in flight") || strings.Contains(t.Reason, "(idle: no GPU pod)") {
			c.costOrdered++
			return
		}
	}
}

func (c *workloadCoverage) add(res *sim.Result) {
	if w := res.Workload; w != nil {
		c.waited += w.DrainsWaited
		c.spared += w.JobsWaitedFor
		c.interrupted += w.JobsInterrupted
	}
}

// TestWorkloadInvariantsRandomized runs the random rollouts of
// TestInvariantsRandomized (failures, XIDs, NotReady nodes, admins,
// windows, rival rollouts, racing controllers, joining nodes), half of
// them over maintenance domains, with GPU jobs on the nodes and drains
// that wait for jobs: every invariant still holds (a node waiting for its
// jobs is cordoned and counts against maxUnavailable like any node in
// flight, the canary, windows, budget and admin cordons as before), no
// node waits for ever (every run converges), and a domain never ends half
// upgraded.
func TestWorkloadInvariantsRandomized(t *testing.T) {
	n := seeds(t)
	var cov workloadCoverage
	for seed := range uint64(n) {
		cfg := randomConfigWith(seed, true)
		if seed%2 == 1 {
			cfg = withDomains(cfg, seed)
		}
		cov.add(mustHoldInvariants(t, seed, withWorkload(cfg, seed), cov.observe))
	}
	if n >= 200 && (cov.costOrdered == 0 || cov.waited == 0 || cov.spared == 0 || cov.interrupted == 0) {
		t.Errorf("the runs with jobs reached too little: %+v", cov)
	}
	t.Logf("%d runs: %+v", n, cov)
}
