package planner_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

// TestInvariantsOneStep plans once from random snapshots, states a rollout
// could be in after any history (including ones no simulated world reaches),
// and checks every safety rule on the result. Whole rollouts are checked by
// package sim's TestInvariantsRandomized.
func TestInvariantsOneStep(t *testing.T) {
	n := 2000
	if v := os.Getenv("GPUFLEET_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GPUFLEET_SIM_SEEDS=%q is not a positive count", v)
		}
	}
	phases := []v1alpha1.NodePhase{
		v1alpha1.NodePending, v1alpha1.NodePending, v1alpha1.NodePending, v1alpha1.NodeDraining,
		v1alpha1.NodeInstalling, v1alpha1.NodeValidating, v1alpha1.NodeSoaking, v1alpha1.NodeDone,
		v1alpha1.NodeRollingBack, v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined,
	}
	starts, joins := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 7))
		b := pt.Rollout("r").Parallel(int32(1+r.IntN(4))).MaxUnavailable(int32(1+r.IntN(6))).Budget(int32(r.IntN(3))).
			OutOfService("remediation", "true")
		if r.IntN(2) == 0 {
			b.Canary(int32(1 + r.IntN(2)))
		}
		switch r.IntN(4) {
		case 0:
			b.Approved()
		case 1:
			b.Approval("other")
		}
		if r.IntN(5) == 0 {
			b.Paused()
		}
		if r.IntN(8) == 0 {
			b.Abort()
		}
		if r.IntN(3) == 0 {
			b.Window("22:00", "04:00", "Europe/Paris")
		}
		// Sometimes maintenance domains of up to four nodes, by index.
		domainSize := 0
		computeDomains := false
		if r.IntN(3) == 0 {
			domainSize = 1 + r.IntN(4)
			// Sometimes ComputeDomains, as their claims say.
			computeDomains = r.IntN(2) == 0
			label := pt.CliqueLabel
			if computeDomains {
				label = v1alpha1.LabelComputeDomain
			}
			b.Domains(label, int32(domainSize))
		}
		ro := b.Build()
		budget := int(ro.Spec.FailureBudget)
		failed := 0
		nodes := make([]planner.Node, 1+r.IntN(30))
		for i := range nodes {
			nb := pt.Node("gpu-" + strconv.Itoa(100+i))
			ph := phases[r.IntN(len(phases))]
			nb.In(ph, now.Add(-time.Duration(r.IntN(120))*time.Minute))
			switch r.IntN(10) {
			case 0:
				nb.Cordoned()
			case 1:
				nb.NotReady()
			case 2:
				nb.Labels(v1alpha1.LabelPool, pt.Pool, "remediation", "true")
			case 3:
				nb.Drained().Driver(true, pt.Target)
			case 4:
				nb.DriverFailed()
			case 5:
				nb.Signal(now.Add(-time.Minute), "XidError")
			case 6:
				// Registered by a provisioner: no driver label, no driver.
				nb.Unlabelled().Driver(false, "")
			case 7:
				// Adopted: runs a driver, carries no driver label.
				nb.Unlabelled()
			}
			if domainSize > 0 && r.IntN(8) > 0 {
				if computeDomains {
					nb.ComputeDomain("cd-" + strconv.Itoa(i/domainSize))
				} else {
					nb.InDomain(strconv.Itoa(i / domainSize))
				}
			}
			// Sometimes a DRA node at any of its steps.
			if r.IntN(3) == 0 {
				nb.DRA([]string{pt.Previous, pt.Target}[r.IntN(2)])
				nb.Plugin([]string{"", v1alpha1.DRAPluginPaused, v1alpha1.DRAPluginResumed}[r.IntN(3)], r.IntN(2) == 0, r.IntN(2) == 0)
				if r.IntN(3) == 0 {
					nb.Claims("ml/claim-" + strconv.Itoa(i))
				}
			}
			if (ph == v1alpha1.NodeRolledBack || ph == v1alpha1.NodeQuarantined || ph == v1alpha1.NodeRollingBack) && failed <= budget && r.IntN(2) == 0 {
				nb.Failed()
				failed++
			}
			n := nb.Build()
			switch r.IntN(8) {
			case 0:
				// Another rollout's node: its progress is not ours to see.
				n.Owner, n.Phase, n.Since, n.Failed = "other", "", time.Time{}, false
			case 1:
				n.Owner = ro.Name
			}
			nodes[i] = n
		}
		// Sometimes an older rollout over the same pool, which goes first
		// on the nodes that belong to none.
		var peers []planner.Peer
		if r.IntN(3) == 0 {
			peers = append(peers, planner.Peer{Name: "older", Created: ro.CreationTimestamp.Add(-time.Hour), NodeSelector: ro.Spec.NodeSelector, Deleting: r.IntN(3) == 0})
		}
		if r.IntN(3) == 0 {
			peers = append(peers, planner.Peer{Name: "other", Created: ro.CreationTimestamp.Add(time.Hour), NodeSelector: ro.Spec.NodeSelector})
		}
		at := now.Add(time.Duration(r.IntN(7*24)) * time.Hour)
		res := planner.Plan(planner.Snapshot{Rollout: ro, Nodes: nodes, Others: peers}, at)
		after := make([]planner.Node, len(nodes))
		copy(after, nodes)
		index := map[string]int{}
		for i := range after {
			index[after[i].Name] = i
		}
		for _, tr := range res.Transitions {
			tr.ApplyTo(&after[index[tr.Node]], ro.Name, at)
			switch {
			case tr.Join:
				joins++
			case tr.From == v1alpha1.NodePending:
				starts++
			}
		}
		check := simcheck.NewStepChecker()
		check.Step(sim.Step{At: at, Rollout: ro, Before: nodes, After: after, Result: res, Others: peers})
		if v := check.Violations(); len(v) > 0 {
			for _, n := range nodes {
				t.Logf("%s %s owner=%q ready=%t unsched=%t failed=%t drv=%s/%t/%t since=%s labels=%v", n.Name, n.Phase, n.Owner, n.Ready, n.Unschedulable, n.Failed, n.DriverVersion, n.DriverReady, n.DriverFailed, n.Since, n.Labels)
			}
			for _, tr := range res.Transitions {
				t.Logf("%s", tr)
			}
			t.Fatalf("seed %d: %v", seed, v)
		}
	}
	if starts == 0 || joins == 0 {
		t.Fatalf("the random snapshots started %d nodes and joined %d: the test checks too little", starts, joins)
	}
}
