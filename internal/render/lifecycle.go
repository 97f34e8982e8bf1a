package render

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/lifecycle"
)

// lifecycleObjects is the lifecycle step: the cluster's DriverRollout, named
// after the release it rolls out, covering every GPU node of the cluster.
//
// Note: one rollout per cluster, over all its GPU nodes, is how render keeps
// its promise never to write two DriverRollouts that select the same node: a
// rollout per pool would need selectors proven disjoint. A release change
// writes the rollout under a new name; Flux applies it and prunes the old
// one, and for the moment both exist the controller gives each node to one
// (the old one keeps its nodes until its finalizer releases them, and the
// new one reports the Overlap condition meanwhile).
func lifecycleObjects(p clusterPlan) ([]object, error) {
	return []object{{file: "driverrollout.yaml", obj: driverRolloutOf(p)}}, nil
}

// driverRolloutOf builds the cluster's DriverRollout: the one builder of
// both render and `gpufleet simulate` (see DriverRollout).
func driverRolloutOf(p clusterPlan) *v1alpha1.DriverRollout {
	dr := lifecycle.DriverRolloutFor(p.rollout.Name, p.policy, p.rollout.Driver, p.rollbackTo.Driver, map[string]string{LabelGPUPresent: "true"})
	dr.Labels = releaseLabels(p, p.rollout.Name)
	if p.approved {
		// The in-cluster canary passes only when spec.approval names the
		// rollout: `gpufleet approve RELEASE/CLUSTER` (or the wave's
		// approval) is the one way to approve at both levels.
		dr.Spec.Approval = dr.Name
	}
	if p.policy.Actuator != v1alpha1.DefaultActuator {
		dr.Spec.Actuator = p.policy.Actuator
	}
	dr.Spec.Paused = p.paused
	dr.Spec.Abort = p.abort
	return dr
}
