package render

import (
	"github.com/gpufleet/gpufleet/internal/lifecycle"
)

// lifecycleObjects is the lifecycle step: the cluster's DriverRollout, named
// after the release it rolls out, covering every GPU node of the cluster.
func lifecycleObjects(p clusterPlan) ([]object, error) {
	dr := DriverRollout(p)
	return []object{{file: "driverrollout.yaml", obj: dr}}, nil
}

// DriverRollout builds the DriverRollout of a cluster plan from its policy.
func DriverRollout(p clusterPlan) any {
	previous := p.release.Driver
	if p.previous != nil {
		previous = p.previous.Driver
	}
	dr := lifecycle.DriverRolloutFor(p.release.Name, p.policy, p.release.Driver, previous, map[string]string{LabelGPUPresent: "true"})
	dr.Labels = labels(p)
	return dr
}
