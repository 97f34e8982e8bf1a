package rehearse

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// workload is the jobs a rehearsal of nodes nodes runs while the rollout
// goes over them: a training cluster's mix (sim.DefaultWorkload) holding
// Options.Utilization of the GPUs, whose jobs of several nodes each span a
// whole maintenance domain where the policy names one, as NVLink-domain
// training does. Nil at zero utilization: idle nodes, nothing to destroy.
// blind hides the jobs from the controller (sim.Workload.Unobserved): the
// planner starts the nodes in name order, as it did before it saw GPU
// pods. The jobs come from the seed alone, so every way of a comparison
// meets the same ones. With Options.DRA they hold their GPUs through
// claims of NVIDIA's DRA driver, taken for GPUs as the policy's
// dra-drivers say.
func (o Options) workload(p fleet.Policy, nodes int, blind bool) *sim.Workload {
	if o.Utilization <= 0 {
		return nil
	}
	w := sim.DefaultWorkload(nodes, domainLabel(p))
	w.Utilization = o.Utilization
	w.Unobserved = blind
	w.DRADrivers = p.DRADrivers
	if o.DRA {
		for i := range w.Mix {
			w.Mix[i].Claim = v1alpha1.DRADriverGPU
		}
	}
	return w
}
