package planner

import (
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Snapshot is everything the planner may look at.
type Snapshot struct {
	// Rollout is the DriverRollout: its name, spec and last written status.
	// The status matters for two things only: the canary nodes once chosen
	// (so the choice never moves) and the conditions' transition times.
	Rollout *v1alpha1.DriverRollout
	// Nodes are the cluster's nodes, in any order; the planner applies the
	// rollout's node selector itself.
	Nodes []Node
}

// LabelDriver is the node label the driver's NVIDIADriver selects on: the
// controller flips it to move a node to another driver.
const LabelDriver = "gpufleet.io/driver"

// Node is one node as the controller observed it, with the rollout progress
// recorded on it (labels and annotations), so a restarted controller rebuilds
// exactly this.
type Node struct {
	Name   string
	Labels map[string]string
	// Unschedulable is spec.unschedulable: cordoned, by anyone.
	Unschedulable bool
	// AdminCordoned records that the node was already cordoned when the
	// rollout first touched it. Such a node is never uncordoned by the
	// rollout: someone had a reason we do not know.
	AdminCordoned bool
	// Ready is the node's Ready condition.
	Ready bool

	// Phase is the node's rollout phase; empty means Pending.
	Phase v1alpha1.NodePhase
	// Since is when the node entered Phase.
	Since time.Time
	// Failed records that the node left the happy path because of a
	// failure (not an abort); it counts against the failure budget.
	Failed bool

	// Drained: every evictable pod has left the node.
	Drained bool
	// DriverReady: the driver pod on the node is Ready.
	DriverReady bool
	// DriverFailed: the driver pod cannot install (crash loop, init error).
	DriverFailed bool
	// DriverVersion is the version the node reports through GPU Feature
	// Discovery (nvidia.com/cuda.driver-version.full).
	DriverVersion string
	// Signals are health signals from the spec's sources (node conditions,
	// Events, the Prometheus query) seen on the node; only those at or
	// after Since count during a soak.
	Signals []Signal
}

// Signal is one health signal seen on a node.
type Signal struct {
	At time.Time
	// Source is where it was seen: "condition", "event" or "prometheus".
	Source string
	// Reason is the condition type, Event reason or metric, e.g. XidError.
	Reason string
	// Message is the detail, e.g. "Xid 79: GPU has fallen off the bus".
	Message string
}

// Transition is one node moving from one phase to another, with what the
// actuator must do for it. The Reason sentence feeds events, logs, status
// and transcripts alike.
type Transition struct {
	Node     string
	From, To v1alpha1.NodePhase
	Reason   string

	// Failure: the node failed; record it (Node.Failed) so it counts
	// against the budget.
	Failure bool
	// Cordon the node (it was schedulable).
	Cordon bool
	// RecordAdminCordon: the node was already cordoned when the rollout
	// started it; record that so it is never uncordoned by the rollout.
	RecordAdminCordon bool
	// Uncordon the node: it is back in service and was not cordoned by an
	// admin before the rollout.
	Uncordon bool
	// Driver, when set, is the version the node's driver label must select
	// (the target to install, the previous one to roll back).
	Driver string
	// Quarantine the node: the spec's quarantine label and taint.
	Quarantine bool
}

// Result is what one planning pass decided.
type Result struct {
	// Transitions in a stable order: progress of nodes in flight first
	// (in name order), then new starts (in start order).
	Transitions []Transition
	// Status is the rollout status after the transitions.
	Status v1alpha1.DriverRolloutStatus
	// NextCheck is the earliest time the plan can change with no new
	// observation (a timeout, a soak's end, a window opening, a freeze
	// ending); zero when only an observation can change it. The controller
	// requeues for it; the simulator jumps to it.
	NextCheck time.Time
}

// inFlight reports whether a node in phase p is being worked on.
func inFlight(p v1alpha1.NodePhase) bool {
	switch p {
	case v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating,
		v1alpha1.NodeSoaking, v1alpha1.NodeRollingBack:
		return true
	}
	return false
}

// InFlight reports whether a node in phase p is being worked on by the
// rollout (it holds a parallelNodes slot and counts as unavailable).
func InFlight(p v1alpha1.NodePhase) bool { return inFlight(p) }

// phaseOf maps the empty phase of an untouched node to Pending.
func phaseOf(n *Node) v1alpha1.NodePhase {
	if n.Phase == "" {
		return v1alpha1.NodePending
	}
	return n.Phase
}
