package rehearse

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// operatorOFEDLimit is what the gpu-operator actuator's column leaves out
// of a release that moves OFED too.
const operatorOFEDLimit = "moves the GPU driver alone: the OFED driver takes a maintenance of its own, the Network Operator's, with its own cordon and drain"

// movesOFED reports whether the rehearsed rollout moves the OFED driver.
func (r *Rehearsal) movesOFED() bool { return r.rollout != nil && r.rollout.Spec.OFED.Moves() }

// DrainStats are how many times a rehearsal drained each node it drained.
type DrainStats struct {
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

func drainStats(drains map[string]int) DrainStats {
	var s DrainStats
	for _, d := range drains {
		s.Mean += float64(d)
		s.Max = max(s.Max, d)
	}
	if len(drains) > 0 {
		s.Mean /= float64(len(drains))
	}
	return s
}

// separateTitle is the heading of the column that moves the two drivers
// in two rollouts.
const separateTitle = "two rollouts (OFED, then GPU)"

// rehearseSeparately rehearses a release of both drivers as two rollouts,
// as without gpufleet's one maintenance: OFED first, a rollout whose GPU
// driver stays (spec.ofed only), then the GPU driver in a second rollout
// starting where the first ended, OFED unchanged; the same policy, seed
// and jobs. Its rehearsal adds the two up: the makespan from the first's
// start to the second's end, the failures and the work destroyed of both,
// the nodes where the second left them; drains counts both per node.
func (o Options) rehearseSeparately(cluster, release string) (Rehearsal, DrainStats, []Rehearsal, error) {
	first, err := o.rehearseWith(cluster, release, way{actuator: v1alpha1.ActuatorGPUFleet, ofedOnly: true})
	if err != nil {
		return Rehearsal{}, DrainStats{}, nil, err
	}
	later := o
	later.Start = first.result.End
	second, err := later.rehearseWith(cluster, release, way{actuator: v1alpha1.ActuatorGPUFleet, gpuOnly: true})
	if err != nil {
		return Rehearsal{}, DrainStats{}, nil, err
	}
	drains := first.result.Drains()
	for n, d := range second.result.Drains() {
		drains[n] += d
	}
	sum := second
	sum.Previous = first.Previous
	r := &sum.Report
	r.Start = first.Report.Start
	r.Makespan = sim.Duration(time.Duration(first.Report.Makespan) + time.Duration(second.Report.Makespan))
	r.Failures += first.Report.Failures
	r.BudgetHeld = r.BudgetHeld && first.Report.BudgetHeld
	if a, b := first.Report.Workload, second.Report.Workload; a != nil && b != nil {
		w := *b
		w.GPUHoursDestroyed += a.GPUHoursDestroyed
		w.JobsInterrupted += a.JobsInterrupted
		w.Interruptions += a.Interruptions
		w.MostMultiNodeInterruptions = max(w.MostMultiNodeInterruptions, a.MostMultiNodeInterruptions)
		r.Workload = &w
	}
	return sum, drainStats(drains), []Rehearsal{first, second}, nil
}

// ofedOf describes the OFED move of a comparison's rollout; empty when it
// moves none.
func ofedOf(r *Rehearsal) string {
	if r.rollout == nil || r.rollout.Spec.OFED == nil {
		return ""
	}
	s := r.rollout.Spec.OFED
	rdma := ""
	if s.Peermem {
		rdma = ", GPUDirect RDMA"
	}
	return fmt.Sprintf("%s → %s%s", s.PreviousVersion, s.TargetVersion, rdma)
}

// withSeparate adds to c, when the release moves both drivers on its
// cluster, the column of the two drivers moved by two separate rollouts,
// to set beside gpufleet's first column, which moves both in one
// maintenance per node.
func (o Options) withSeparate(c *Comparison, release string) error {
	k := slices.IndexFunc(c.Runs, func(r ActuatorRun) bool { return r.Actuator == v1alpha1.ActuatorGPUFleet })
	if k < 0 {
		return nil
	}
	ro := c.Runs[k].Rehearsal.rollout
	if !c.Runs[k].Rehearsal.movesOFED() || ro.Spec.TargetVersion == ro.Spec.PreviousVersion {
		return nil
	}
	c.OFED = ofedOf(&c.Runs[k].Rehearsal)
	sum, drains, parts, err := o.rehearseSeparately(c.Cluster, release)
	if err != nil {
		return fmt.Errorf("simulate %s (%s): %w", c.Cluster, separateTitle, err)
	}
	c.Runs = append(c.Runs, ActuatorRun{Actuator: v1alpha1.ActuatorGPUFleet, Order: c.Runs[k].Order, Title: separateTitle, Rehearsal: sum, Drains: &drains, Separate: parts})
	return nil
}
