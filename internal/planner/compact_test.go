package planner_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// TestCompactPlansTheSame plans random pools twice, whole and compacted,
// and wants the same result: transitions, status and next check. The pools
// are mostly the nodes Compact leaves out (Done and free Pending ones),
// with every kind of node that must stay among them, GPU pods on some (the
// pass then starts the cheapest first), and specs on both sides of each
// precondition. It also wants Compact to have left nodes out
// often, or it would prove nothing.
func TestCompactPlansTheSame(t *testing.T) {
	n := 3000
	if v := os.Getenv("GPUFLEET_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GPUFLEET_SIM_SEEDS=%q is not a positive count", v)
		}
	}
	compacted, busy := 0, 0
	var buf []planner.Node
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 11))
		ro, nodes, others := randomCompactable(r)
		at := now.Add(time.Duration(r.IntN(3*24)) * time.Hour)
		whole := planner.Plan(planner.Snapshot{Rollout: ro.DeepCopy(), Nodes: nodes, Others: others}, at)
		snap := planner.Compact(planner.Snapshot{Rollout: ro.DeepCopy(), Nodes: nodes, Others: others}, buf)
		if len(snap.Nodes) < len(nodes) {
			compacted++
			if snap.Settled.PendingBusy > 0 {
				busy++
			}
			buf = snap.Nodes[:0]
		}
		if got := snap.Settled.Done + snap.Settled.Pending + len(snap.Nodes); got != len(nodes) {
			t.Fatalf("seed %d: %d nodes kept and counted of %d", seed, got, len(nodes))
		}
		part := planner.Plan(snap, at)
		if !reflect.DeepEqual(whole, part) {
			t.Fatalf("seed %d: compacted to %d of %d nodes (settled %+v), the plan differs (-whole +compacted):\n%s",
				seed, len(snap.Nodes), len(nodes), snap.Settled, cmp.Diff(whole, part))
		}
	}
	if compacted < n/4 || busy < n/20 {
		t.Fatalf("only %d of %d snapshots were compacted, %d leaving out nodes with GPU pods: the test proves little", compacted, n, busy)
	}
	t.Logf("%d of %d snapshots compacted, %d leaving out nodes with GPU pods", compacted, n, busy)
}

// randomCompactable is a random pool in name order, and a rollout over it.
func randomCompactable(r *rand.Rand) (*v1alpha1.DriverRollout, []planner.Node, []planner.Peer) {
	b := pt.Rollout("r").Parallel(int32(1 + r.IntN(5))).Budget(int32(r.IntN(3)))
	if r.IntN(2) == 0 {
		b.MaxUnavailable(int32(1 + r.IntN(8)))
	} else {
		b.MaxUnavailablePercent(fmt.Sprintf("%d%%", 5+r.IntN(40)))
	}
	switch r.IntN(4) {
	case 0:
		b.Canary(int32(1 + r.IntN(2)))
	case 1:
		b.CanaryNodes("gpu-1003")
	}
	if r.IntN(3) > 0 {
		b.Approved()
	}
	if r.IntN(6) == 0 {
		b.Paused()
	}
	if r.IntN(10) == 0 {
		b.Abort()
	}
	if r.IntN(10) == 0 {
		b.OutOfService("remediation", "true")
	}
	if r.IntN(4) == 0 {
		b.Window("22:00", "04:00", "Europe/Paris")
	}
	ro := b.Build()
	operator := r.IntN(3) == 0
	if operator {
		ro.Spec.Actuator = v1alpha1.ActuatorGPUOperator
	}
	if r.IntN(2) == 0 {
		// The canary as an earlier pass chose it.
		ro.Status.Canary.Nodes = []string{fmt.Sprintf("gpu-%d", 1000+r.IntN(4))}
	}
	size := 1 + r.IntN(60)
	nodes := make([]planner.Node, size)
	failed := 0
	for i := range nodes {
		nb := pt.Node(fmt.Sprintf("gpu-%d", 1000+i))
		switch k := r.IntN(20); {
		case k < 7: // free and pending: most of a pool before its rollout
		case k < 14:
			nb.Owner(ro.Name).In(v1alpha1.NodeDone, now.Add(-time.Hour)).Driver(true, pt.Target)
		case k == 14:
			nb.Owner(ro.Name).In(v1alpha1.NodeDraining, now.Add(-time.Duration(r.IntN(60))*time.Minute))
			if r.IntN(2) == 0 {
				nb.Drained()
			}
		case k == 15:
			nb.Owner(ro.Name).In(v1alpha1.NodeSoaking, now.Add(-time.Duration(r.IntN(90))*time.Minute)).Driver(true, pt.Target)
		case k == 16:
			nb.Owner(ro.Name).In(v1alpha1.NodeInstalling, now.Add(-time.Duration(r.IntN(60))*time.Minute)).Driver(r.IntN(2) == 0, pt.Target)
		case k == 17:
			nb.Owner(ro.Name).In([]v1alpha1.NodePhase{v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined, v1alpha1.NodeRollingBack}[r.IntN(3)], now.Add(-time.Hour))
			if failed <= int(ro.Spec.FailureBudget) {
				nb.Failed()
				failed++
			}
		case k == 18:
			nb.Owner("other") // another rollout's node
			if r.IntN(2) == 0 {
				// with progress an observer would not have shown
				nb.In(v1alpha1.NodeDone, now.Add(-time.Hour)).Driver(true, pt.Target)
			}
		default:
			nb.Driver(true, pt.Target) // pending and already on the target
		}
		switch r.IntN(14) {
		case 0:
			nb.Cordoned()
		case 1:
			nb.NotReady()
		case 2:
			nb.AdminCordoned()
		case 3:
			nb.Labels(v1alpha1.LabelPool, pt.Pool, "remediation", "true")
		case 4:
			nb.Labels("pool", "other") // not selected
		case 5:
			nb.Signal(now.Add(-time.Minute), "XidError")
		case 6:
			// A failure recorded on a node in any phase, as an earlier
			// attempt could have left it.
			if failed <= int(ro.Spec.FailureBudget) {
				nb.Failed()
				failed++
			}
		}
		nodes[i] = nb.Build()
		if operator {
			// The operator's marks: mostly held, in any of its states.
			l := maps.Clone(nodes[i].Labels)
			if r.IntN(5) > 0 {
				l[v1alpha1.LabelOperatorUpgradeSkip] = "true"
			}
			states := []string{v1alpha1.OperatorStateUpgradeRequired, v1alpha1.OperatorStateUpgradeRequired, v1alpha1.OperatorStateDone, "",
				v1alpha1.OperatorStateCordonRequired, v1alpha1.OperatorStateFailed, v1alpha1.OperatorStateValidation}
			if st := states[r.IntN(len(states))]; st != "" {
				l[v1alpha1.LabelOperatorUpgradeState] = st
			}
			nodes[i].Labels = l
		}
	}
	if r.IntN(2) == 0 {
		// GPU pods on some nodes, so that a pass starts the cheapest
		// pending nodes first; a few amounts of work, so that ties in
		// it are ordered by name.
		for i := range nodes {
			if r.IntN(3) == 0 {
				nodes[i].GPUPods = 1 + r.IntN(3)
				nodes[i].GPUWork = float64(r.IntN(4)) * 3600
			}
		}
	}
	var others []planner.Peer
	if r.IntN(8) == 0 {
		others = append(others, planner.Peer{Name: "older", Created: ro.CreationTimestamp.Add(-time.Hour), NodeSelector: ro.Spec.NodeSelector})
	}
	return ro, nodes, others
}

// TestCompactorFollowsChanges plans random pools over many rounds with one
// Compactor, changing random nodes between rounds (bumping their
// versions, as its contract asks) and sometimes the rollout, and wants
// every round to plan as the whole pool does. A Compactor that kept a
// stale class for a changed node, or missed a change of the rollout, would
// plan from nodes as they were.
func TestCompactorFollowsChanges(t *testing.T) {
	n := 400
	if v := os.Getenv("GPUFLEET_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GPUFLEET_SIM_SEEDS=%q is not a positive count", v)
		}
	}
	compacted := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 13))
		ro, nodes, others := randomCompactable(r)
		versions := make([]int, len(nodes))
		var c planner.Compactor
		var buf []planner.Node
		at := now
		for round := range 12 {
			whole := planner.Plan(planner.Snapshot{Rollout: ro.DeepCopy(), Nodes: nodes, Others: others}, at)
			snap := c.Compact(planner.Snapshot{Rollout: ro.DeepCopy(), Nodes: nodes, Others: others}, versions, buf)
			if len(snap.Nodes) < len(nodes) {
				compacted++
				buf = snap.Nodes[:0]
			}
			if part := planner.Plan(snap, at); !reflect.DeepEqual(whole, part) {
				t.Fatalf("seed %d round %d: compacted to %d of %d nodes (settled %+v), the plan differs (-whole +compacted):\n%s",
					seed, round, len(snap.Nodes), len(nodes), snap.Settled, cmp.Diff(whole, part))
			}
			// The round's transitions happen, as an actuator would write
			// them, and a few more changes from elsewhere.
			index := map[string]int{}
			for i := range nodes {
				index[nodes[i].Name] = i
			}
			for _, tr := range whole.Transitions {
				i := index[tr.Node]
				tr.ApplyTo(&nodes[i], ro.Name, at)
				versions[i]++
			}
			ro.Status = whole.Status
			for range r.IntN(4) {
				i := r.IntN(len(nodes))
				nd := &nodes[i]
				switch r.IntN(8) {
				case 7:
					// Its GPU pods change, as they do all the time: the
					// contract asks for no new version.
					nd.GPUPods, nd.GPUWork = r.IntN(3), float64(r.IntN(5))*1800
					if nd.GPUPods == 0 {
						nd.GPUWork = 0
					}
					continue
				case 0:
					nd.Ready = !nd.Ready
				case 1:
					nd.Unschedulable = !nd.Unschedulable
				case 2:
					nd.DriverVersion = pt.Target
				case 3:
					nd.Labels = map[string]string{"pool": "other"}
				case 4:
					nd.Drained, nd.DriverReady = true, true
				case 5:
					nd.Failed = true
				case 6:
					nd.Phase, nd.Owner = v1alpha1.NodeDone, ro.Name
				}
				versions[i]++
			}
			switch r.IntN(10) {
			case 0:
				// Another target: the nodes on the previous driver are on
				// it now, and those on the old target are not.
				ro.Spec.TargetVersion, ro.Spec.PreviousVersion = pt.Previous, pt.Target
			case 1:
				ro.Spec.ParallelNodes = int32(1 + r.IntN(5))
			case 2:
				ro.Spec.Canary.Nodes = []string{nodes[r.IntN(len(nodes))].Name}
				ro.Status.Canary.Nodes = nil
			case 3:
				ro.Spec.Abort = !ro.Spec.Abort
			case 4:
				// Another selector: the nodes moved to pool "other" only.
				ro.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": "other"}}
			}
			at = at.Add(time.Duration(1+r.IntN(90)) * time.Minute)
		}
	}
	if compacted < n {
		t.Fatalf("only %d compacted rounds in %d pools: the test proves little", compacted, n)
	}
}
