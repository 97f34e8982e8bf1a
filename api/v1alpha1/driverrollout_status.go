package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NodePhase is where one node stands in a rollout. The controller keeps it on
// the node itself (label gpufleet.io/rollout-phase) so a restart loses nothing.
//
// +kubebuilder:validation:Enum=Pending;Draining;Installing;Validating;Soaking;Done;RollingBack;RolledBack;Quarantined
type NodePhase string

// Node phases. A node goes Pending → Draining → Installing → Validating →
// Soaking → Done; a failure leads to RollingBack → RolledBack, or to
// Quarantined when the rollback fails too.
const (
	NodePending     NodePhase = "Pending"
	NodeDraining    NodePhase = "Draining"
	NodeInstalling  NodePhase = "Installing"
	NodeValidating  NodePhase = "Validating"
	NodeSoaking     NodePhase = "Soaking"
	NodeDone        NodePhase = "Done"
	NodeRollingBack NodePhase = "RollingBack"
	NodeRolledBack  NodePhase = "RolledBack"
	NodeQuarantined NodePhase = "Quarantined"
)

// OrPending is p, or Pending for the empty phase of a node no rollout has
// touched yet.
func (p NodePhase) OrPending() NodePhase {
	if p == "" {
		return NodePending
	}
	return p
}

// InFlight reports whether a node in phase p is being worked on by its
// rollout: it holds one of the rollout's parallelNodes slots and counts
// as unavailable.
func (p NodePhase) InFlight() bool {
	switch p {
	case NodeDraining, NodeInstalling, NodeValidating, NodeSoaking, NodeRollingBack:
		return true
	}
	return false
}

// HoldsCordon reports whether a rollout holds its own cordon on a node in
// phase p, unless the node is marked admin-cordoned: it cordons a node when
// it starts it or rolls it back and lifts the cordon when the node is Done
// or rolled back; a quarantined node stays cordoned. In every other phase a
// cordon on the node is someone else's.
func (p NodePhase) HoldsCordon() bool { return p.InFlight() || p == NodeQuarantined }

// RolloutPhase summarises the rollout for people and printer columns.
//
// +kubebuilder:validation:Enum=Progressing;WaitingForApproval;OutsideWindow;Paused;Stalled;Aborting;Aborted;Completed;CompletedWithFailures
type RolloutPhase string

// Rollout phases.
const (
	PhaseProgressing        RolloutPhase = "Progressing"
	PhaseWaitingForApproval RolloutPhase = "WaitingForApproval"
	PhaseOutsideWindow      RolloutPhase = "OutsideWindow"
	PhasePaused             RolloutPhase = "Paused"
	PhaseStalled            RolloutPhase = "Stalled"
	PhaseAborting           RolloutPhase = "Aborting"
	PhaseAborted            RolloutPhase = "Aborted"
	PhaseCompleted          RolloutPhase = "Completed"
	// PhaseCompletedWithFailures: nothing is left to do, but some nodes
	// failed and were rolled back or quarantined, so they are not on the
	// target driver. It is terminal and needs a person: Ready is False and
	// Stalled is True, so neither Flux nor `gpufleet gate` counts it done.
	PhaseCompletedWithFailures RolloutPhase = "CompletedWithFailures"
)

// CanaryResult is how the canary went.
//
// +kubebuilder:validation:Enum=None;Pending;InProgress;Passed;Failed
type CanaryResult string

// Canary results. None means the rollout has no canary.
const (
	CanaryNone       CanaryResult = "None"
	CanaryPending    CanaryResult = "Pending"
	CanaryInProgress CanaryResult = "InProgress"
	CanaryPassed     CanaryResult = "Passed"
	CanaryFailed     CanaryResult = "Failed"
)

// Condition types: the kstatus three, then the domain ones.
const (
	ConditionReady              = "Ready"
	ConditionReconciling        = "Reconciling"
	ConditionStalled            = "Stalled"
	ConditionWaitingForApproval = "WaitingForApproval"
	ConditionOutsideWindow      = "OutsideWindow"
	ConditionPaused             = "Paused"
	ConditionBudgetExhausted    = "BudgetExhausted"
	ConditionCompleted          = "Completed"
	ConditionAborted            = "Aborted"
	// ConditionCompletedWithFailures is True when the rollout ended with
	// failed nodes (rolled back or quarantined) within its budget; then
	// Completed is False, so "Completed" always means every selected node
	// is on the target driver.
	ConditionCompletedWithFailures = "CompletedWithFailures"
	// ConditionOverlap is True when some selected nodes belong to another
	// DriverRollout (label gpufleet.io/rollout), or are left to an older
	// one that selects them too; its message names the other rollouts.
	// Those nodes are left alone and count as unavailable.
	ConditionOverlap = "Overlap"
	// ConditionSuperseded: a newer gpufleet-controller acted on this rollout
	// (status.controllerVersion), and the controller reading it is older:
	// it leaves the rollout and its nodes alone rather than take over state
	// it may not understand. The newer version, back, goes on.
	ConditionSuperseded = "Superseded"
)

// DriverRolloutStatus is what the controller observed. None of its fields
// changes on every pass (no heartbeat timestamps), so writing it causes no
// endless watch events.
type DriverRolloutStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarises the rollout.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// Progress is "done/total", for the printer column.
	// +optional
	Progress string `json:"progress,omitempty"`

	// Total is how many nodes the selector picks.
	// +optional
	Total int32 `json:"total,omitempty"`

	// Nodes counts the selected nodes per phase.
	// +optional
	Nodes NodeCounts `json:"nodes,omitempty"`

	// Canary is how the canary went.
	// +optional
	Canary CanaryStatus `json:"canary,omitempty"`

	// BudgetUsed is how many nodes failed (rolling back, rolled back or
	// quarantined because of a failure) against spec.failureBudget.
	// +optional
	BudgetUsed int32 `json:"budgetUsed,omitempty"`

	// ControllerVersion is the version of the gpufleet-controller that last
	// acted on the rollout. An older version never acts on it (see the
	// Superseded condition).
	// +optional
	ControllerVersion string `json:"controllerVersion,omitempty"`

	// Conditions: Ready, Reconciling, Stalled (kstatus), and
	// WaitingForApproval, OutsideWindow, Paused, BudgetExhausted,
	// Completed, CompletedWithFailures, Aborted, Overlap, Superseded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeCounts counts nodes per phase.
type NodeCounts struct {
	Pending     int32 `json:"pending,omitempty"`
	Draining    int32 `json:"draining,omitempty"`
	Installing  int32 `json:"installing,omitempty"`
	Validating  int32 `json:"validating,omitempty"`
	Soaking     int32 `json:"soaking,omitempty"`
	Done        int32 `json:"done,omitempty"`
	RollingBack int32 `json:"rollingBack,omitempty"`
	RolledBack  int32 `json:"rolledBack,omitempty"`
	Quarantined int32 `json:"quarantined,omitempty"`
	// Elsewhere counts the selected nodes this rollout leaves alone
	// because they belong to another rollout, or are left to an older one
	// that selects them too (see the Overlap condition). They are in none
	// of the phases above.
	Elsewhere int32 `json:"elsewhere,omitempty"`
}

// CanaryStatus is how the canary went and on which nodes.
type CanaryStatus struct {
	// Result of the canary.
	// +optional
	Result CanaryResult `json:"result,omitempty"`
	// Nodes are the canary nodes.
	// +listType=set
	// +optional
	Nodes []string `json:"nodes,omitempty"`
}
