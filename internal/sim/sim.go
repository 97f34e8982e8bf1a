package sim

import (
	"fmt"
	"maps"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// PlanFunc is the planner the simulator drives; planner.Plan unless a test
// swaps in a broken one to prove the invariant checks catch it (see hooks).
type PlanFunc func(planner.Snapshot, time.Time) planner.Result

// Config is one rehearsal: the rollout, the nodes it starts from, the world
// it meets (profile, seed, script) and how the controller acts on it (tick,
// the approval given when asked). It is all `gpufleet simulate` may set. What
// tests change in a run to prove something about it is not here but in
// hooks, which no package outside sim can reach.
type Config struct {
	// Rollout is the DriverRollout to run; Run works on a copy.
	Rollout *v1alpha1.DriverRollout
	// Nodes are the cluster's nodes at the start (see Nodes).
	Nodes []planner.Node
	// Start is when the rollout is created.
	Start time.Time
	// Seed makes the run reproducible.
	Seed    uint64
	Profile Profile
	// Script are scripted events: approvals, pauses, cordons, failures,
	// more rollouts (World.Create), nodes joining and leaving.
	Script []Event
	// Horizon stops a run that has not finished after this long; default
	// 60 days.
	Horizon time.Duration
	// Record keeps the transcript and the timeline.
	Record bool
	// Tick, when set, makes the simulated controller act on whole ticks
	// from Start (an event at 10:05:23 is seen at 10:06 with a 1m tick), as
	// a real controller batches the events of a burst into one reconcile.
	// It cuts the planning passes of large fleets several-fold. Zero plans
	// at every event's exact time.
	Tick time.Duration
	// ApproveWhenAsked plays the person who approves: as soon as the first
	// rollout waits for approval, spec.approval is set to its name (the
	// edit `gpufleet approve` makes), so a rehearsal measures the
	// machinery and not the wait for a person.
	ApproveWhenAsked bool
	// Workload, when set, runs jobs on the nodes and measures what the
	// rollout destroys of them (Result.Workload); nil runs none, and the
	// nodes are idle as the planner sees them.
	Workload *Workload
}

// hooks are what the tests of this package change in a run to prove
// something about the planner, the checker or the scheduling: a broken
// planner the checker must catch, lockstep batches to measure refilling
// against, an observer of every pass, racing controllers, writes without
// their precondition. They are a struct of their own, unexported, that only
// this package's tests reach (RunHooked, in export_test.go), rather than a
// field of Config or an exported second argument: then no package outside
// sim can set one, and the compiler, not a test, proves that `gpufleet
// simulate` runs the real planner, unobserved, one pass per rollout and
// round, each write under its node's resourceVersion. The zero value is a
// rehearsal's.
type hooks struct {
	// Plan replaces planner.Plan. A swapped-in planner may write to its
	// snapshot, so it always plans from a copy of the nodes.
	Plan PlanFunc
	// Lockstep starts a new batch only once no node is in flight: the
	// baseline that refill-at-once scheduling is measured against.
	Lockstep bool
	// Observe, when set, is called after every planning step with copies
	// of the nodes before and after it (for invariant checks). An observed
	// run plans from every node: an observer needs them all.
	Observe func(Step)
	// Racing plays two controllers that both believe they lead (a leader
	// election hand-over, or two passes on a lagging cache): every live
	// rollout is planned twice per round, all from the same moment's view,
	// and the passes write one after the other. Each write carries the
	// version of the node its pass read, and a node that changed since
	// refuses it, which ends that pass, as a conflict ends the
	// controller's. Without it each rollout plans once per round, in turn,
	// seeing the writes of the ones before. (More rollouts come from
	// World.Create in the Script.)
	Racing bool
	// Unlocked drops that precondition, as a controller patching nodes
	// without their resourceVersion would: only for the tests proving the
	// checker catches two rollouts taking the same node.
	Unlocked bool
}

// Step is one planning pass of one rollout, for the Observe hook (see
// hooks) and simcheck's Checker; or, with Released set, the release of a
// deleted rollout's nodes.
type Step struct {
	At      time.Time
	Rollout *v1alpha1.DriverRollout
	// Before is the view the pass planned from; After the same rollout's
	// view once its writes were made.
	Before []planner.Node
	After  []planner.Node
	// Result is what the pass decided, its transitions cut to those the
	// world accepted.
	Result planner.Result
	// Others are the other live rollouts, as the pass saw them.
	Others []planner.Peer
	// Truth are the nodes in the world just before the pass wrote, which
	// a racing pass may not have read; nil when unknown.
	Truth []planner.Node
	// CordonsBefore and CordonsAfter say who held each cordoned node's
	// cordon ("admin", or the rollout that cordoned it) before and after
	// the pass; nil when unknown (a single step from a made-up snapshot).
	CordonsBefore, CordonsAfter map[string]string
	// Refused counts the planned writes the world refused: the node had
	// changed since the pass read it.
	Refused int
	// Released are the nodes released because Rollout was deleted; such a
	// step has no Result.
	Released []string
	// OFEDPods are the OFED pods the Network Operator started since the
	// step before, each with the node as it was then (the world's own
	// record: a pod replaced and Ready again between two steps shows in
	// no node).
	OFEDPods []OFEDPod
}

// Event is a scripted change of the world at Start+At.
type Event struct {
	At time.Duration
	// What is the transcript line; empty for none.
	What string
	Do   func(*World)
}

// Result is how a simulated rollout went.
type Result struct {
	Start, End time.Time
	// Makespan is End-Start: from creation to the last transition.
	Makespan time.Duration
	Phase    v1alpha1.RolloutPhase
	Status   v1alpha1.DriverRolloutStatus
	// Nodes are the nodes at the end.
	Nodes []planner.Node
	// Steps is how many planning passes ran.
	Steps int
	// Work is, per node, the time the rollout would need for it if it never
	// waited (drain + install + report + soak): the input of LowerBound.
	// Only nodes a rollout started are in it: a node settled on the
	// target, or never reached, did no work.
	Work map[string]time.Duration
	// Transcript and Timeline are kept when Config.Record is set.
	Transcript []Line
	Timeline   []Segment
	// HitHorizon: the run was cut at Config.Horizon.
	HitHorizon bool
	// Phases are the rollout's phases over time, always kept (they change
	// rarely): where windows, approvals and pauses held it.
	Phases []PhaseSpan
	// Rollouts are the rollouts still alive at the end, the first one
	// first when it is, with their last status.
	Rollouts []*v1alpha1.DriverRollout
	// Refused counts the writes refused because a node changed after the
	// pass that planned them read it.
	Refused int
	// Workload is what the rollout did to Config.Workload's jobs; nil
	// without one.
	Workload *WorkloadResult
	world    *World
}

// Drains are how many times each node was drained during the run (by the
// rollout, or by the GPU Operator on its path), for the nodes drained at
// least once.
func (r *Result) Drains() map[string]int {
	out := map[string]int{}
	for i, d := range r.world.drains {
		if d > 0 {
			out[r.world.nodes[i].Name] = d
		}
	}
	return out
}

// ViewOf returns the nodes at the end as the controller of the live
// rollout called name would observe them.
func (r *Result) ViewOf(name string) []planner.Node { return r.world.viewFor(name) }

// PhaseSpan is the rollout in one phase from From to To.
type PhaseSpan struct {
	Phase    v1alpha1.RolloutPhase
	From, To time.Time
}

// Line is one transcript line.
type Line struct {
	At   time.Time
	Who  string
	Text string
}

// Segment is a node in one phase from From to To.
type Segment struct {
	Node     string
	Phase    v1alpha1.NodePhase
	From, To time.Time
}

// Nodes builds n Ready, schedulable nodes named prefix-NNN carrying labels
// and, as every node gpufleet manages does, the driver label
// (v1alpha1.LabelDriver), all reporting driver version. The nodes share one
// label map.
func Nodes(n int, prefix string, labels map[string]string, version string) []planner.Node {
	width := len(fmt.Sprint(max(n, 100) - 1))
	if _, ok := labels[v1alpha1.LabelDriver]; !ok {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.LabelDriver] = version
	}
	out := make([]planner.Node, n)
	for i := range out {
		out[i] = planner.Node{
			Name:          fmt.Sprintf("%s-%0*d", prefix, width, i),
			Labels:        labels,
			Ready:         true,
			DriverReady:   true,
			DriverVersion: version,
		}
	}
	return out
}
