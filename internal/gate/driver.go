package gate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// NodeDriver is the driver a node runs, as the gate reads it: GPU Feature
// Discovery's label, and, where NVIDIA's GPU DRA driver publishes
// ResourceSlices for the node, the version they publish, which must agree
// with it (dra.DriverOf, the rule `gpufleet init` reads a node by too).
type NodeDriver struct{ dra.Driver }

// Driver is the driver node n runs, by what the gate observed.
func (o Observed) Driver(n corev1.Node) NodeDriver {
	return NodeDriver{dra.DriverOf(n.Labels[v1alpha1.LabelGFDDriverFull], o.DRA[n.Name])}
}

// Runs reports whether the node runs want (a version, or the branch of a
// precompiled driver) and its reports agree.
func (d NodeDriver) Runs(want string) bool {
	return d.Conflict == "" && planner.DriverMatches(d.Version, want)
}

// String is the version for a message: "580.95.05", "none", or
// "580.95.05 (ResourceSlices)" when only the slices say it.
func (d NodeDriver) String() string {
	switch {
	case d.Version == "":
		return "none"
	case d.FromSlices:
		return d.Version + " (ResourceSlices)"
	}
	return d.Version
}
