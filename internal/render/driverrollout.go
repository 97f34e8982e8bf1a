package render

import (
	"fmt"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// DriverRollout returns the DriverRollout render writes for cluster once
// release reaches it (empty release: what render writes now). It is what
// `gpufleet simulate` rehearses, so the rehearsal runs the very object Flux
// applies: its name, node selector, policy, windows, freezes and approval.
//
// A release that has not reached the cluster yet is rendered as a rollout
// that has just arrived: rolling back to the stable release, neither
// approved nor aborted, paused only when the promotion is.
func DriverRollout(f *fleet.Fleet, cluster, release string) (*v1alpha1.DriverRollout, error) {
	c := f.Clusters[cluster]
	if c == nil {
		return nil, fmt.Errorf("no cluster %q", cluster)
	}
	p := planFor(f, c)
	if release != "" && release != p.rollout.Name {
		r := f.Releases[release]
		if r == nil {
			return nil, fmt.Errorf("no release %q", release)
		}
		p.rollout = r
		p.approved, p.abort = false, false
		p.paused = f.Promotion.Paused
	}
	return driverRolloutOf(p), nil
}

// Target is what a cluster should end on as the fleet file stands: the one
// answer to "what does this cluster roll out" that render writes, simulate
// rehearses and the gate checks.
type Target struct {
	// Release is what the cluster's operators run and its nodes end on
	// (fleet.ReleaseFor): the stable release once an abort reached it.
	Release *fleet.Release
	// DriverRollout is the DriverRollout render writes for the cluster.
	// After an abort it still carries the aborted release, with
	// spec.abort set, so that its nodes roll back to Release's driver.
	DriverRollout *v1alpha1.DriverRollout
	// NVIDIADrivers are the names of the NVIDIADrivers, one per pool in
	// the fleet file's order, of Release's driver: those the nodes end on.
	// Render may write another driver's too while a rollout is under way.
	//
	// Empty for a cluster whose driver stays with the ClusterPolicy
	// (fleet.DriverManagementClusterPolicy): render writes no NVIDIADriver
	// there, the ClusterPolicy's one driver DaemonSet runs Release's
	// driver, and it is the ClusterPolicy (its spec.driver.version and
	// state) that says whether the cluster runs it.
	NVIDIADrivers []string
	// ControllerImage is gpufleet-controller's image render installs
	// (see ControllerImage); empty where the fleet file names no
	// controller version.
	ControllerImage string
}

// TargetFor returns the Target of cluster.
func TargetFor(f *fleet.Fleet, cluster string) (Target, error) {
	dr, err := DriverRollout(f, cluster, "")
	if err != nil {
		return Target{}, err
	}
	t := Target{Release: f.ReleaseFor(cluster), DriverRollout: dr, ControllerImage: ControllerImage(f, cluster)}
	if clusterPolicyManaged(f.Clusters[cluster]) {
		return t, nil
	}
	operator := f.PolicyFor(cluster).Actuator == v1alpha1.ActuatorGPUOperator
	for _, p := range f.Clusters[cluster].Pools {
		name := NVIDIADriverName(p.Name, t.Release.Driver)
		if operator {
			name = OperatorNVIDIADriverName(p.Name)
		}
		t.NVIDIADrivers = append(t.NVIDIADrivers, name)
	}
	return t, nil
}
