package netop

import (
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Look is one look of the upgrade controller at a node whose upgrade state
// (v1alpha1.LabelOFEDUpgradeState) is state: current says its OFED pod runs
// the NicClusterPolicy's version, held that it carries the skip label
// (v1alpha1.LabelOFEDUpgradeSkip). It returns the states the node moves
// through, in order (none when it stays), and whether the controller then
// replaces the node's OFED pod; it cordons the node first, and Replaced
// says how the upgrade ends.
func Look(state string, current, held bool) (moves []string, replace bool) {
	switch {
	case current && (state == "" || state == v1alpha1.OperatorStateUpgradeRequired):
		return []string{v1alpha1.OperatorStateDone}, false
	case !current && (state == "" || state == v1alpha1.OperatorStateDone || state == v1alpha1.OperatorStateFailed):
		moves = []string{v1alpha1.OperatorStateUpgradeRequired}
	case state != v1alpha1.OperatorStateUpgradeRequired:
		return nil, false // in progress: the pod's outcome moves it on
	}
	if held {
		// The skip label is read in upgrade-required only: a node
		// released once is not stopped by putting it back.
		return moves, false
	}
	return append(moves, v1alpha1.OperatorStateCordonRequired, v1alpha1.OperatorStatePodRestartRequired), true
}

// Replaced is the states a node passes once its new OFED pod came up
// (ready) or failed: the controller uncordons the node it cordoned, or
// leaves it failed and cordoned.
func Replaced(ready bool) []string {
	if !ready {
		return []string{v1alpha1.OperatorStateFailed}
	}
	return []string{v1alpha1.OperatorStateUncordonRequired, v1alpha1.OperatorStateDone}
}

// WaitLabel is the value of v1alpha1.LabelMOFEDWait on a node whose OFED
// pod's driver container is Ready or not, as the Network Operator's
// NicClusterPolicy controller writes it.
func WaitLabel(ready bool) string {
	if ready {
		return "false"
	}
	return "true"
}

// DriverStale reports whether a GPU driver whose container started at
// driverStarted runs against an OFED driver that became Ready at ofedReady
// after it: its nvidia_peermem was built against the OFED it replaced, and
// crash-loops until the driver pod is restarted. Times are whole seconds:
// a driver started in the second OFED became Ready is taken for one
// started after it, as with GPUDirect RDMA the driver waits to see OFED
// ready before it starts.
func DriverStale(driverStarted, ofedReady time.Time) bool {
	return !ofedReady.IsZero() && driverStarted.Before(ofedReady.Truncate(time.Second))
}
