package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// The defaults of a DriverRolloutSpec: one contract for the CRD, the fleet
// file and the planner. The CRD's kubebuilder:default markers on the spec
// spell the same values (markers cannot name a constant, so a test compares
// the generated CRD with these); the fleet parser starts every cluster's
// policy from them; the planner applies them to a field left zero, which is
// how a spec built in Go (tests, the simulator) marshals an unset field: the
// durations are omitzero, so the API server would default them the same way.
//
// Note: an explicit zero duration is refused by the CRD and by the fleet
// parser alike, because the planner cannot tell it from unset: a soak of
// "0s" would otherwise mean no soak to the API server and thirty minutes to
// the planner.
const (
	// DefaultParallelNodes is spec.parallelNodes unset: one node at a time.
	DefaultParallelNodes = 1
	// DefaultMaxUnavailable is spec.maxUnavailable unset: one node out of
	// service at a time, for any reason.
	DefaultMaxUnavailable = 1
	// DefaultFailureBudget is spec.failureBudget unset: the first failed
	// node stops the rollout.
	DefaultFailureBudget = 0
	// DefaultSoak is spec.soak unset: half an hour on the new driver with
	// no health signal before a node is Done (XID errors of a bad driver
	// tend to show within minutes of the first GPU work).
	DefaultSoak = 30 * time.Minute
	// DefaultDrainTimeout is spec.timeouts.drain unset. Half an hour lets a
	// training job checkpoint and exit within its grace period; a drain
	// that overruns fails the node, spends the failure budget and rolls a
	// healthy node back, so a short default costs more than a long one.
	DefaultDrainTimeout = 30 * time.Minute
	// DefaultInstallTimeout is spec.timeouts.install unset: how long the
	// driver pod may take to become Ready (a driver build from source
	// takes minutes).
	DefaultInstallTimeout = 20 * time.Minute
	// DefaultValidateTimeout is spec.timeouts.validate unset: how long the
	// node may take to report the new version through GPU Feature
	// Discovery.
	DefaultValidateTimeout = 10 * time.Minute
	// DefaultActuator is spec.actuator unset: gpufleet moves the nodes
	// itself, the one path with per-node rollback.
	DefaultActuator = ActuatorGPUFleet
	// DefaultEvictMode is spec.evict.mode unset: a drain evicts only the
	// pods that hold a GPU, the ones the driver swap needs gone.
	DefaultEvictMode = EvictGPUPods
	// MaxStepDuration bounds the soak and every timeout (the CRD's rules
	// say 168h): a week.
	MaxStepDuration = 168 * time.Hour
)

// MaxUnavailableOf resolves spec.maxUnavailable (a count, or a percentage
// such as "10%") against total selected nodes. It is the one rounding rule
// of the project: a percentage rounds down, but never below one node, since
// "10%" of five nodes would otherwise be zero and a rollout that may never
// take a node out never moves. Unset, or anything the schema would refuse
// (zero, a malformed percentage), is DefaultMaxUnavailable.
//
// For example, "25%" is 2 of 10 nodes and 1 of 2 nodes; 3 is 3 of any.
func MaxUnavailableOf(v *intstr.IntOrString, total int) int {
	if v == nil {
		return DefaultMaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, false)
	if err != nil || n < 1 {
		if v.Type == intstr.String && err == nil {
			return 1 // a percentage of a small pool: never below one node
		}
		return DefaultMaxUnavailable
	}
	return n
}
