package rehearse

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// WriteComparisons writes each comparison as one table, a column per way,
// then, when jobs ran, what starting the cheapest nodes first saved
// against the fixed order, and what the operator's path cannot do.
func WriteComparisons(w io.Writer, all []Comparison) error {
	for i, c := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(c.Runs) == 0 {
			continue
		}
		first := c.Runs[0].Rehearsal
		head := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		fmt.Fprintf(head, "cluster\t%s: %d nodes, driver %s → %s\n", c.Cluster, first.Report.Nodes, first.Previous, first.Target)
		fmt.Fprintf(head, "policy\t%s (the same for every actuator)\n", first.Policy)
		work := first.Workload != ""
		if work {
			fmt.Fprintf(head, "workload\tthe same jobs in every run: %s\n", first.Workload)
		}
		if c.OFED != "" {
			fmt.Fprintf(head, "ofed\t%s: in one maintenance per node with the GPU driver, or in two rollouts (OFED first)\n", c.OFED)
		}
		if err := head.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if err := writeComparisonTable(w, c, work); err != nil {
			return err
		}
		if work {
			if line := orderSaving(c); line != "" {
				fmt.Fprintf(w, "\n%s\n", line)
			}
		}
		for _, r := range c.Runs {
			if len(r.Limits) == 0 {
				continue
			}
			fmt.Fprintf(w, "\nwhat the %s actuator cannot do:\n", r.Actuator)
			for _, l := range r.Limits {
				fmt.Fprintf(w, "  - %s\n", l)
			}
		}
	}
	return nil
}

// writeComparisonTable writes c's rows, a column per run; work adds the
// order the nodes started in and what the rollout destroyed of the jobs.
func writeComparisonTable(w io.Writer, c Comparison, work bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, cell func(r *ActuatorRun) string) {
		fmt.Fprintf(tw, "%s", name)
		for k := range c.Runs {
			fmt.Fprintf(tw, "\t%s", cell(&c.Runs[k]))
		}
		fmt.Fprintln(tw)
	}
	report := func(cell func(r *Rehearsal) string) func(r *ActuatorRun) string {
		return func(r *ActuatorRun) string { return cell(&r.Rehearsal) }
	}
	row("actuator", func(r *ActuatorRun) string { return r.Title })
	if work {
		row("node order", func(r *ActuatorRun) string { return string(r.Order) })
	}
	row("outcome", report(func(r *Rehearsal) string { return string(r.Report.Outcome) }))
	row("makespan", report(func(r *Rehearsal) string { return ShortDuration(time.Duration(r.Report.Makespan)) }))
	if c.OFED != "" {
		row("drains per node (mean, max)", func(r *ActuatorRun) string {
			if r.Drains == nil {
				return "-"
			}
			return fmt.Sprintf("%.2f, %d", r.Drains.Mean, r.Drains.Max)
		})
	}
	row("efficiency", report(func(r *Rehearsal) string { return fmt.Sprintf("%.0f%%", 100*r.Report.Efficiency) }))
	row("done", report(func(r *Rehearsal) string { return fmt.Sprint(r.Report.Done) }))
	row("rolled back", report(func(r *Rehearsal) string { return fmt.Sprint(r.Report.RolledBack) }))
	row("quarantined", report(func(r *Rehearsal) string { return fmt.Sprint(r.Report.Quarantined) }))
	row("untouched", report(func(r *Rehearsal) string { return fmt.Sprint(r.Report.Untouched) }))
	row("failures", report(func(r *Rehearsal) string {
		s := fmt.Sprintf("%d of %d", r.Report.Failures, r.Report.Budget)
		if !r.Report.BudgetHeld {
			s += " (stopped)"
		}
		return s
	}))
	row("planning passes", report(func(r *Rehearsal) string { return fmt.Sprint(r.result.Steps) }))
	if work {
		destroyed := func(cell func(r *Rehearsal) string) func(r *ActuatorRun) string {
			return report(func(r *Rehearsal) string {
				if r.Report.Workload == nil {
					return "-"
				}
				return cell(r)
			})
		}
		row("GPU-hours destroyed", destroyed(func(r *Rehearsal) string { return fmt.Sprintf("%.1f", r.Report.Workload.GPUHoursDestroyed) }))
		row("jobs interrupted", destroyed(func(r *Rehearsal) string { return fmt.Sprint(r.Report.Workload.JobsInterrupted) }))
		row("most interruptions of a multi-node job", destroyed(func(r *Rehearsal) string { return fmt.Sprint(r.Report.Workload.MostMultiNodeInterruptions) }))
	}
	return tw.Flush()
}

// orderSaving says what gpufleet's cheapest-first start order destroyed,
// and how long it took, against the fixed name order on the same nodes and
// jobs; empty when c lacks either run.
func orderSaving(c Comparison) string {
	cheap, fixed := c.run(OrderCheapestFirst), c.run(OrderNodeName)
	if cheap == nil || fixed == nil || cheap.Report.Workload == nil || fixed.Report.Workload == nil {
		return ""
	}
	lost, fixedLost := cheap.Report.Workload.GPUHoursDestroyed, fixed.Report.Workload.GPUHoursDestroyed
	var s string
	switch {
	case fixedLost > 0:
		s = fmt.Sprintf("cheapest first destroys %.0f%% of the GPU-hours that name order destroys (%.1f of %.1f)", 100*lost/fixedLost, lost, fixedLost)
	case lost > 0:
		s = fmt.Sprintf("cheapest first destroys %.1f GPU-hours, name order none", lost)
	default:
		s = "neither order destroys any GPU work"
	}
	if cheap.Report.Done != fixed.Report.Done {
		// A rollout the failure budget stopped early did less: its
		// makespan says nothing of the order.
		return s + fmt.Sprintf("; the rollouts ended with %d and %d of %d nodes done, so they did not do the same work.", cheap.Report.Done, fixed.Report.Done, fixed.Report.Nodes)
	}
	if m := fixed.Report.Makespan; m > 0 {
		s += fmt.Sprintf(", in %.0f%% of its makespan", 100*float64(cheap.Report.Makespan)/float64(m))
	}
	return s + "."
}

// run is the rehearsal of gpufleet's own actuator that started the nodes
// in order; nil when c has none.
func (c Comparison) run(order Order) *Rehearsal {
	for k := range c.Runs {
		if r := &c.Runs[k]; r.Actuator == v1alpha1.ActuatorGPUFleet && r.Order == order {
			return &r.Rehearsal
		}
	}
	return nil
}
