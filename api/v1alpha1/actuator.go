package v1alpha1

// Actuator says who moves a rollout's nodes onto the new driver.
//
// +kubebuilder:validation:Enum=gpufleet;gpu-operator
type Actuator string

const (
	// ActuatorGPUFleet: gpufleet-controller cordons, drains and moves each
	// node to the new driver's NVIDIADriver by flipping its
	// gpufleet.io/driver label, and rolls a failed node back on its own.
	ActuatorGPUFleet Actuator = "gpufleet"
	// ActuatorGPUOperator: the GPU Operator's own upgrade controller
	// (k8s-operator-libs pkg/upgrade) cordons, drains and restarts the
	// driver pod of each node, after render changed the pool's one
	// NVIDIADriver in place. gpufleet-controller only decides when each
	// node may go: it holds every selected node back with the operator's
	// skip label (LabelOperatorUpgradeSkip) and releases nodes one by one
	// under the same canary, approval, windows, freezes, maxUnavailable
	// and failure budget, and watches each upgraded node's soak.
	//
	// What this path cannot do: roll one node back (the driver DaemonSet
	// has one version: going back means reverting the release for the
	// whole pool, which abort does); quarantine a failed node other than
	// by label and taint (the operator owns the cordon).
	ActuatorGPUOperator Actuator = "gpu-operator"
)

// OperatorActuatorLimits are what the gpu-operator actuator cannot do,
// whatever the policy says: the controller's --help, `gpufleet simulate
// --compare` and docs/spec/v1alpha1/driverrollout.md say it alike.
var OperatorActuatorLimits = []string{
	"no per-node rollback: the driver DaemonSet has one version, so going back means reverting the release for the whole pool (abort does)",
	"quarantine only by label and taint: the operator owns the cordon",
	"a node released to the operator cannot be stopped: its skip label is read at upgrade-required only",
}

// ActuatorOf is spec.actuator with the default applied: a spec built in
// Go leaves it empty, which the API server would default the same way.
func ActuatorOf(spec *DriverRolloutSpec) Actuator {
	if spec.Actuator == "" {
		return DefaultActuator
	}
	return spec.Actuator
}

// The GPU Operator's node labels and annotations for its driver upgrades
// (k8s-operator-libs pkg/upgrade/consts.go with the driver name "gpu"), as
// gpufleet reads and writes them on the gpu-operator actuator's path.
const (
	// LabelOperatorUpgradeState is the operator's per-node upgrade state
	// (one of the OperatorState* values; absent before it first looked).
	LabelOperatorUpgradeState = "nvidia.com/gpu-driver-upgrade-state"
	// LabelOperatorUpgradeSkip set to "true" keeps the operator from
	// taking the node past upgrade-required. It is honoured there only: a
	// node already cordoned by the operator goes on.
	LabelOperatorUpgradeSkip = "nvidia.com/gpu-driver-upgrade.skip"
	// AnnotationOperatorInitialUnschedulable is the operator's record that
	// a node was cordoned when its upgrade began; a node carrying it ends
	// upgrade-done without being uncordoned.
	AnnotationOperatorInitialUnschedulable = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
)

// The operator's upgrade states, in the order a node goes through them.
const (
	OperatorStateUpgradeRequired    = "upgrade-required"
	OperatorStateCordonRequired     = "cordon-required"
	OperatorStateWaitForJobs        = "wait-for-jobs-required"
	OperatorStatePodDeletion        = "pod-deletion-required"
	OperatorStateDrainRequired      = "drain-required"
	OperatorStatePodRestartRequired = "pod-restart-required"
	OperatorStateValidation         = "validation-required"
	OperatorStateUncordonRequired   = "uncordon-required"
	OperatorStateDone               = "upgrade-done"
	OperatorStateFailed             = "upgrade-failed"
)

// OperatorStates are the operator's upgrade states in order.
var OperatorStates = []string{
	OperatorStateUpgradeRequired, OperatorStateCordonRequired, OperatorStateWaitForJobs,
	OperatorStatePodDeletion, OperatorStateDrainRequired, OperatorStatePodRestartRequired,
	OperatorStateValidation, OperatorStateUncordonRequired, OperatorStateDone, OperatorStateFailed,
}

// OperatorUpgrading reports whether the operator counts a node in state s
// as an upgrade in progress (GetUpgradesInProgress): every state but none,
// upgrade-required and upgrade-done. upgrade-failed counts too, so a
// failed node keeps one of its maxParallelUpgrades slots.
func OperatorUpgrading(s string) bool {
	switch s {
	case "", OperatorStateUpgradeRequired, OperatorStateDone:
		return false
	}
	return true
}
