package gate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Adoption is where a cluster stands in coming under gpufleet: who runs its
// GPU driver, and how many of its GPU nodes gpufleet already moves. It is
// what `gpufleet status --live` and the dashboard show per cluster; the
// driver-management, driver-label and held checks judge the same facts.
type Adoption struct {
	// DriverManagement is who runs the driver as the fleet file says
	// (fleet.DriverManagementNVIDIADriver or ...ClusterPolicy).
	DriverManagement string `json:"driverManagement"`
	// LiveDriverManagement is who runs it as the cluster's ClusterPolicy
	// says (DriverManagementOf); empty without a ClusterPolicy.
	LiveDriverManagement string `json:"liveDriverManagement,omitempty"`
	// By is how a node comes under gpufleet on the cluster's actuator:
	// AdoptedLabelled (gpufleet's: it carries gpufleet.io/driver, which its
	// NVIDIADrivers select on) or AdoptedHeld (the gpu-operator actuator:
	// gpufleet-controller holds it with the operator's skip label, or has
	// released it).
	By string `json:"by"`
	// Under of Nodes GPU nodes of the cluster's pools are under gpufleet.
	Under int `json:"under"`
	Nodes int `json:"nodes"`
}

// How a node comes under gpufleet (Adoption.By).
const (
	AdoptedLabelled = "labelled"
	AdoptedHeld     = "held"
)

// AdoptionOf reads a cluster's adoption from what the gate observed.
func AdoptionOf(e Expected, o Observed) Adoption {
	a := Adoption{DriverManagement: e.DriverManagement, LiveDriverManagement: DriverManagementOf(o.ClusterPolicy), By: AdoptedLabelled}
	under := func(n corev1.Node) bool { return n.Labels[v1alpha1.LabelDriver] != "" }
	if e.Actuator == v1alpha1.ActuatorGPUOperator {
		a.By, under = AdoptedHeld, func(n corev1.Node) bool { return Held(e, n) }
	}
	for _, n := range o.Nodes {
		if e.PoolOf(n) == nil {
			continue
		}
		a.Nodes++
		if under(n) {
			a.Under++
		}
	}
	return a
}

// String is the adoption in a few words, as status's ADOPTION column
// shows it: "clusterpolicy, 3/4 held", with the ClusterPolicy's own mode
// when it differs from the fleet file's.
func (a Adoption) String() string {
	mode := a.DriverManagement
	if a.LiveDriverManagement != "" && a.LiveDriverManagement != a.DriverManagement {
		mode += " (cluster: " + a.LiveDriverManagement + ")"
	}
	return fmt.Sprintf("%s, %d/%d %s", mode, a.Under, a.Nodes, a.By)
}
