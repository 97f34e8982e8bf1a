package rehearse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// Actuators are the two ways a rollout's nodes can be moved, in the order a
// comparison shows them.
var Actuators = []v1alpha1.Actuator{v1alpha1.ActuatorGPUFleet, v1alpha1.ActuatorGPUOperator}

// OperatorLimits are what the gpu-operator actuator cannot do
// (v1alpha1.OperatorActuatorLimits).
var OperatorLimits = v1alpha1.OperatorActuatorLimits

// Comparison is one cluster rehearsed with each actuator under the same
// policy, the same nodes and the same seed: the same node meets the same
// drain, install, report times and faults on both.
type Comparison struct {
	Cluster string `json:"cluster"`
	// Runs are one rehearsal per actuator, in the order of Actuators.
	Runs []ActuatorRun `json:"runs"`
}

// ActuatorRun is one actuator's rehearsal.
type ActuatorRun struct {
	Actuator  v1alpha1.Actuator `json:"actuator"`
	Rehearsal Rehearsal         `json:"rehearsal"`
	// Limits are what this path cannot do (OperatorLimits for the
	// operator's).
	Limits []string `json:"limits,omitempty"`
}

// Compare rehearses each cluster Options names with every actuator, the
// cluster's policy otherwise as the fleet file resolves it.
func (o Options) Compare(_ context.Context) ([]Comparison, error) {
	f := o.Fleet
	clusters := f.ClusterNames()
	if o.Cluster != "" {
		if _, ok := f.Clusters[o.Cluster]; !ok {
			return nil, inputErrorf("no cluster %q in %s (clusters: %s)", o.Cluster, o.FleetFile, strings.Join(clusters, ", "))
		}
		clusters = []string{o.Cluster}
	}
	if o.Release != "" && f.Releases[o.Release] == nil {
		return nil, inputErrorf("no release %q in %s (releases: %s)", o.Release, o.FleetFile, strings.Join(f.ReleaseNames(), ", "))
	}
	if o.Timeline {
		return nil, inputErrorf("--svg draws one rehearsal: leave out the comparison of actuators")
	}
	release, err := Release(f, o.Release)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	var out []Comparison
	for _, c := range clusters {
		cmp := Comparison{Cluster: c}
		for _, a := range Actuators {
			r, err := o.rehearseWith(c, release, a)
			if err != nil {
				return nil, fmt.Errorf("simulate %s with the %s actuator: %w", c, a, err)
			}
			run := ActuatorRun{Actuator: a, Rehearsal: r}
			if a == v1alpha1.ActuatorGPUOperator {
				run.Limits = OperatorLimits
			}
			cmp.Runs = append(cmp.Runs, run)
		}
		out = append(out, cmp)
	}
	return out, nil
}

// UnfinishedComparisons is Unfinished over every rehearsal of a comparison.
func UnfinishedComparisons(all []Comparison) error {
	var errs []error
	for _, c := range all {
		for _, r := range c.Runs {
			if err := Unfinished([]Rehearsal{r.Rehearsal}); err != nil {
				errs = append(errs, fmt.Errorf("%s actuator: %w", r.Actuator, err))
			}
		}
	}
	return errors.Join(errs...)
}

// rehearseWith is rehearse with the DriverRollout's actuator set to a
// (empty: the one its policy names). On the operator's path the nodes
// start held with its skip label, as the rollout before this one leaves
// them, and the simulator plays the operator's upgrade controller (sim's
// operator model). A file with nothing to move from rehearses a
// reinstall. The approval `gpufleet approve` writes comes as soon as the
// rollout asks for it: the rehearsal measures the machinery, not how long
// a person takes.
func (o Options) rehearseWith(cluster, release string, a v1alpha1.Actuator) (Rehearsal, error) {
	f := o.Fleet
	p := f.PolicyFor(cluster)
	ro, err := render.DriverRollout(f, cluster, release)
	if err != nil {
		return Rehearsal{}, err
	}
	if a != "" {
		ro.Spec.Actuator = a
	}
	target, previous := ro.Spec.TargetVersion, ro.Spec.PreviousVersion
	drill := f.Releases[release].ExpectFailure
	if previous == "" {
		previous = target
	}
	var nodes []planner.Node
	if o.Nodes > 0 {
		nodes = sim.Nodes(o.Nodes, "gpu", gpuNodeLabels(f.Clusters[cluster], nil), previous)
	} else {
		for _, pool := range f.Clusters[cluster].Pools {
			nodes = append(nodes, sim.Nodes(pool.Nodes, pool.Name, gpuNodeLabels(f.Clusters[cluster], pool), previous)...)
		}
	}
	if len(nodes) == 0 {
		return Rehearsal{}, errors.New("the cluster has no GPU nodes: give --nodes")
	}
	if ro.Spec.Actuator == v1alpha1.ActuatorGPUOperator {
		for i := range nodes {
			l := maps.Clone(nodes[i].Labels)
			l[v1alpha1.LabelOperatorUpgradeSkip] = "true"
			nodes[i].Labels = l
		}
	}
	prof := sim.DefaultProfile()
	prof.InstallFailRate, prof.XIDRate = o.FailRate, o.XIDRate
	if drill && !o.FailRateSet {
		prof.InstallFailRate = 1
	}
	res, err := sim.Run(sim.Config{
		Rollout: ro, Nodes: nodes, Start: o.Start, Seed: o.Seed, Profile: prof,
		Record: o.Record, Tick: time.Minute, ApproveWhenAsked: true,
	})
	if err != nil {
		return Rehearsal{}, err
	}
	pol := DescribePolicy(p)
	return Rehearsal{
		Cluster: cluster, Rollout: ro.Name, Previous: previous, Target: target, Policy: pol,
		Report: sim.Summarise(ro, res), result: res, rollout: ro, calendar: planner.NewCalendar(&ro.Spec),
	}, nil
}

// WriteComparisons writes each comparison as one table, a column per
// actuator, then what the operator's path cannot do.
func WriteComparisons(w io.Writer, all []Comparison) error {
	for i, c := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(c.Runs) == 0 {
			continue
		}
		first := c.Runs[0].Rehearsal
		fmt.Fprintf(w, "cluster %s: %d nodes, driver %s → %s\n", c.Cluster, first.Report.Nodes, first.Previous, first.Target)
		fmt.Fprintf(w, "policy  %s (the same for every actuator)\n\n", first.Policy)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(name string, cell func(r *Rehearsal) string) {
			fmt.Fprintf(tw, "%s", name)
			for k := range c.Runs {
				fmt.Fprintf(tw, "\t%s", cell(&c.Runs[k].Rehearsal))
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "actuator")
		for _, r := range c.Runs {
			fmt.Fprintf(tw, "\t%s", r.Actuator)
		}
		fmt.Fprintln(tw)
		row("outcome", func(r *Rehearsal) string { return string(r.Report.Outcome) })
		row("makespan", func(r *Rehearsal) string { return ShortDuration(time.Duration(r.Report.Makespan)) })
		row("efficiency", func(r *Rehearsal) string { return fmt.Sprintf("%.0f%%", 100*r.Report.Efficiency) })
		row("done", func(r *Rehearsal) string { return fmt.Sprint(r.Report.Done) })
		row("rolled back", func(r *Rehearsal) string { return fmt.Sprint(r.Report.RolledBack) })
		row("quarantined", func(r *Rehearsal) string { return fmt.Sprint(r.Report.Quarantined) })
		row("untouched", func(r *Rehearsal) string { return fmt.Sprint(r.Report.Untouched) })
		row("failures", func(r *Rehearsal) string {
			s := fmt.Sprintf("%d of %d", r.Report.Failures, r.Report.Budget)
			if !r.Report.BudgetHeld {
				s += " (stopped)"
			}
			return s
		})
		row("planning passes", func(r *Rehearsal) string { return fmt.Sprint(r.result.Steps) })
		if err := tw.Flush(); err != nil {
			return err
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
