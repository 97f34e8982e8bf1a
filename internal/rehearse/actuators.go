package rehearse

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// OperatorLimits are what the gpu-operator actuator cannot do
// (v1alpha1.OperatorActuatorLimits).
var OperatorLimits = v1alpha1.OperatorActuatorLimits

// operatorDomainLimit is what the operator's path cannot do of a policy
// with a maintenance domain, and how a comparison rehearses it instead
// (see rehearseWith).
const operatorDomainLimit = "no maintenance domains: its upgrade controller returns each node to service by itself, so this rehearsal moved the domains' nodes one by one"

// Order is the order a rollout starts its pending nodes in.
type Order string

const (
	// OrderCheapestFirst is gpufleet's planner seeing the GPU pods on
	// each node (planner.Node.GPUPods, GPUWork): the nodes whose drain
	// destroys the least work start first.
	OrderCheapestFirst Order = "cheapest first"
	// OrderNodeName is the nodes in name order, blind to the work on
	// them: gpufleet's planner before it saw GPU pods, and the GPU
	// Operator's upgrade controller, which takes its nodes in its own
	// order.
	OrderNodeName Order = "node name"
)

// Comparison is one cluster rehearsed in several ways (who moves the
// nodes, in which order) under the same policy, on the same nodes and
// seed: the same node meets the same drain, install, report times and
// faults in each, and the nodes run the same jobs.
type Comparison struct {
	Cluster string `json:"cluster"`
	// OFED is the OFED driver move of a rollout that moves both drivers
	// ("previous → target"), whose comparison adds the two drivers moved
	// by two separate rollouts; empty otherwise.
	OFED string `json:"ofed,omitempty"`
	// Runs are one rehearsal per way, in the order of the table's columns.
	Runs []ActuatorRun `json:"runs"`
}

// ActuatorRun is one way's rehearsal.
type ActuatorRun struct {
	Actuator v1alpha1.Actuator `json:"actuator"`
	// Order is the order its rollout started the nodes in: without jobs
	// every way keeps the nodes' own, OrderNodeName.
	Order Order `json:"order"`
	// Title is its column's heading.
	Title     string    `json:"title"`
	Rehearsal Rehearsal `json:"rehearsal"`
	// Limits are what this path cannot do (OperatorLimits for the
	// operator's).
	Limits []string `json:"limits,omitempty"`
	// Drains are the drains per node it took, when the rollout moves
	// OFED too (Comparison.OFED).
	Drains *DrainStats `json:"drainsPerNode,omitempty"`
	// Separate are the two rollouts of the separate column, OFED's then
	// the GPU driver's; Rehearsal adds them up.
	Separate []Rehearsal `json:"separateRollouts,omitempty"`
}

// way is one way of moving a cluster's nodes that a comparison rehearses.
// The zero way is the rollout as its policy says: its own actuator, the
// jobs observed.
type way struct {
	// actuator overrides the policy's; empty keeps it.
	actuator v1alpha1.Actuator
	// blind hides the jobs from the controller (sim.Workload.Unobserved).
	blind bool
	order Order
	title string
	// ofedOnly and gpuOnly split a release of both drivers in two
	// rollouts (rehearseSeparately): the OFED driver alone, the GPU
	// driver staying; then the GPU driver alone, OFED on the target.
	ofedOnly, gpuOnly bool
}

// comparedWays are the columns of a comparison. The fixed order shows
// what cheapest-first saves and is left out without jobs: with no GPU pod
// anywhere both orders are the same. The operator's column is blind: its
// upgrade controller takes the nodes in its own order, whatever runs on
// them.
var comparedWays = []way{
	{actuator: v1alpha1.ActuatorGPUFleet, order: OrderCheapestFirst, title: "gpufleet"},
	{actuator: v1alpha1.ActuatorGPUFleet, order: OrderNodeName, title: "gpufleet, name order", blind: true},
	{actuator: v1alpha1.ActuatorGPUOperator, order: OrderNodeName, title: "gpu-operator", blind: true},
}

// Compare rehearses each cluster Options names in every way of
// comparedWays (the name order only when jobs run: Options.Utilization),
// the cluster's policy otherwise as the fleet file resolves it.
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
		for _, w := range comparedWays {
			if w.blind && w.actuator == v1alpha1.ActuatorGPUFleet && o.Utilization <= 0 {
				continue
			}
			r, err := o.rehearseWith(c, release, w)
			if err != nil {
				return nil, fmt.Errorf("simulate %s (%s): %w", c, w.title, err)
			}
			run := ActuatorRun{Actuator: w.actuator, Order: w.order, Title: w.title, Rehearsal: r}
			if o.Utilization <= 0 {
				// No GPU pod anywhere: every planner keeps the nodes' order.
				run.Order = OrderNodeName
			}
			if w.actuator == v1alpha1.ActuatorGPUOperator {
				run.Limits = OperatorLimits
				if domainLabel(f.PolicyFor(c)) != "" {
					run.Limits = append(slices.Clip(run.Limits), operatorDomainLimit)
				}
				// gpufleet's column, rehearsed first, moves OFED as
				// render's rollout says.
				if len(cmp.Runs) > 0 && cmp.Runs[0].Rehearsal.movesOFED() {
					run.Limits = append(slices.Clip(run.Limits), operatorOFEDLimit)
				}
			}
			cmp.Runs = append(cmp.Runs, run)
		}
		if err := o.withSeparate(&cmp, release); err != nil {
			return nil, err
		}
		if cmp.OFED != "" {
			for k := range cmp.Runs {
				if cmp.Runs[k].Drains == nil {
					d := drainStats(cmp.Runs[k].Rehearsal.result.Drains())
					cmp.Runs[k].Drains = &d
				}
			}
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
				errs = append(errs, fmt.Errorf("%s: %w", r.Title, err))
			}
		}
	}
	return errors.Join(errs...)
}

// rehearseWith is rehearse in way w: the DriverRollout's actuator set to
// w's (empty: the one its policy names), the jobs, when any run, hidden
// from the controller when w is blind. On the operator's path the nodes
// start held with its skip label, as the rollout before this one leaves
// them, and the simulator plays the operator's upgrade controller (sim's
// operator model). A file with nothing to move from rehearses a
// reinstall. The approval `gpufleet approve` writes comes as soon as the
// rollout asks for it: the rehearsal measures the machinery, not how long
// a person takes.
func (o Options) rehearseWith(cluster, release string, w way) (Rehearsal, error) {
	f := o.Fleet
	p := f.PolicyFor(cluster)
	ro, err := render.DriverRollout(f, cluster, release)
	if err != nil {
		return Rehearsal{}, err
	}
	if w.actuator != "" {
		ro.Spec.Actuator = w.actuator
	}
	if ro.Spec.Actuator == v1alpha1.ActuatorGPUOperator {
		// The operator's path cannot move OFED in the GPU driver's
		// maintenance (the schema refuses spec.ofed there): compared, it
		// moves the GPU driver alone (operatorOFEDLimit).
		ro.Spec.OFED = nil
	}
	if ro.Spec.Actuator == v1alpha1.ActuatorGPUOperator && ro.Spec.MaintenanceDomain != nil {
		// The planner refuses a domain on the operator's path, as the
		// fleet file does (no domain could return as one unit): compared
		// with gpufleet's, the operator moves the same nodes, labelled in
		// the same domains and running the same jobs, one by one.
		ro.Spec.MaintenanceDomain = nil
	}
	target, previous := ro.Spec.TargetVersion, ro.Spec.PreviousVersion
	drill := f.Releases[release].ExpectFailure
	if previous == "" {
		previous = target
	}
	start := previous
	if ofed := ro.Spec.OFED; ofed != nil {
		switch {
		case w.ofedOnly: // the GPU driver stays
			ro.Spec.TargetVersion, target = previous, previous
		case w.gpuOnly: // OFED moved by the rollout before
			ofed.PreviousVersion = ofed.TargetVersion
		}
	}
	nodes := o.nodes(f.Clusters[cluster], p, start)
	if ofed := ro.Spec.OFED; ofed != nil {
		sim.RunOFED(nodes, ofed.PreviousVersion)
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
	work := o.workload(p, len(nodes), w.blind)
	res, err := sim.Run(sim.Config{
		Rollout: ro, Nodes: nodes, Start: o.Start, Seed: o.Seed, Profile: prof,
		Record: o.Record, Tick: time.Minute, ApproveWhenAsked: true, Workload: work,
	})
	if err != nil {
		return Rehearsal{}, err
	}
	r := Rehearsal{
		Cluster: cluster, Rollout: ro.Name, Previous: previous, Target: target, Policy: DescribePolicy(p),
		Report: sim.Summarise(ro, res), result: res, rollout: ro, calendar: planner.NewCalendar(&ro.Spec),
	}
	if work != nil {
		r.Workload = work.Describe()
	}
	return r, nil
}
