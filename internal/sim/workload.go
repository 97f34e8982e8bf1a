package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Workload is the GPU jobs the simulated nodes run while the rollout goes
// over them (Config.Workload), so that a rehearsal measures what the
// rollout destroys and not only how long it takes. Jobs arrive, are placed
// on schedulable, Ready nodes with free GPUs, run and finish; a drain
// evicts the ones on its node, which destroys the work each did since its
// last checkpoint, on every GPU it holds on every node, and the job is
// submitted again to go on from that checkpoint (jobs.go). The controller
// observes the GPU pods on each node (planner.Node.GPUPods, GPUWork), as
// it does from its cache of GPU pods, so the planner may start the
// cheapest nodes first.
//
// Jobs are drawn from the Config's seed alone, from streams of their own:
// the same seed meets the same jobs under any planner or actuator, and the
// nodes meet the fates they meet without a workload.
type Workload struct {
	// GPUsPerNode is how many GPUs each node has; zero is 8.
	GPUsPerNode int
	// Utilization is the share of the fleet's GPUs that jobs hold at the
	// start (each job some way into its run) and, unless ArrivalsPerHour
	// says otherwise, the load that new jobs offer after it.
	Utilization float64
	// ArrivalsPerHour is how many jobs are submitted an hour on average
	// (a Poisson process); zero: as many as keep Utilization of the GPUs
	// busy (the fleet's GPUs × Utilization / a job's mean GPU-hours).
	ArrivalsPerHour float64
	// Mix are the kinds of job, each drawn with its Weight.
	Mix []JobClass
	// DomainLabel is the node label whose values are the maintenance
	// domains (NVLink/IMEX domains: v1alpha1.LabelGFDClique) that a
	// JobClass with Domain set spans.
	DomainLabel string
	// DRADrivers are the DRA drivers the controller takes for GPUs
	// (spec.dra.drivers); nil: v1alpha1.DefaultDRADrivers.
	DRADrivers []string
	// Unobserved hides the jobs from the controller: the planner sees no
	// GPU pod on any node (GPUPods and GPUWork stay zero) and starts the
	// pending nodes in their own, name, order. It is the fixed order that
	// a comparison measures the cost order against; the jobs run, and are
	// destroyed, just the same.
	Unobserved bool
}

// JobClass is one kind of job of a Workload.
type JobClass struct {
	// Name says what the jobs are, for the description of the workload.
	Name string
	// Weight is the class's share of the jobs submitted, against the
	// other classes' weights.
	Weight float64
	// GPUs are the GPUs a job of one node may hold, one drawn per job
	// (each as likely); empty: the whole node. A job of several nodes
	// holds whole nodes.
	GPUs []int
	// Nodes is how many nodes a job spans; 0 or 1 is one node.
	Nodes int
	// Domain: a job spans every node of one maintenance domain (nodes
	// sharing a value of Workload.DomainLabel), whole; Nodes is ignored.
	Domain bool
	// Duration is the compute a job needs, without interruptions.
	Duration Dist
	// Checkpoint is how often a job saves its progress, from the start of
	// each run; zero: never, and an interruption loses all it did.
	Checkpoint time.Duration
	// Labels are its pods' labels (what spec.evict.waitForCompletion
	// selects by).
	Labels map[string]string
	// Claim is the DRA driver whose ResourceClaim its pods hold their GPUs
	// by (dynamic resource allocation); empty: they request
	// nvidia.com/gpu. A job is a GPU pod to the controller, observed,
	// drained and waited for, only when the one reading says so
	// (planner.HoldsGPU, with Workload.DRADrivers); any other job runs on
	// through the drain and dies when the driver is swapped under it.
	Claim string
}

// LabelJobKind is the pod label DefaultWorkload's jobs carry: "training"
// for the jobs that checkpoint, "batch" for the short ones that never do,
// so that a rehearsal can name either in spec.evict.waitForCompletion.
const LabelJobKind = "gpufleet.io/sim-job-kind"

// JobKind is the pod labels of DefaultWorkload's jobs of kind.
func JobKind(kind string) map[string]string { return map[string]string{LabelJobKind: kind} }

// defaultGPUsPerNode is a DGX/HGX node's eight GPUs.
const defaultGPUsPerNode = 8

// multiNode reports whether a job of class c spans more than one node.
func (c *JobClass) multiNode() bool { return c.Domain || c.Nodes > 1 }

// span is how many nodes a job of class c spans, outside domains.
func (c *JobClass) span() int { return max(c.Nodes, 1) }

// DefaultWorkload is a training cluster's mix for a fleet of nodes of 8
// GPUs, 85% busy: mostly single-node training jobs of several hours that
// checkpoint every hour, a third as many short single-node jobs that never
// checkpoint (evaluations, batch inference, notebooks), and a few jobs of
// several nodes, which hold most of the GPU-hours. With domainLabel set
// the jobs of several nodes each span one maintenance domain, whole (as
// NVLink-domain training does on a GB200 NVL72 rack); otherwise they span
// 2 or 4 nodes, where the fleet has at least four times as many (a gang
// that cannot fit would hold the nodes it waits on for ever).
func DefaultWorkload(nodes int, domainLabel string) *Workload {
	w := &Workload{
		GPUsPerNode: defaultGPUsPerNode,
		Utilization: 0.85,
		DomainLabel: domainLabel,
		Mix: []JobClass{
			{Name: "single-node training", Weight: 0.6, GPUs: []int{1, 2, 4, 8}, Duration: Dist{Median: 6 * time.Hour, Spread: 0.6}, Checkpoint: time.Hour, Labels: JobKind("training")},
			{Name: "single-node, never checkpoints", Weight: 0.3, GPUs: []int{1, 2, 4}, Duration: Dist{Median: 90 * time.Minute, Spread: 0.7}, Labels: JobKind("batch")},
		},
	}
	switch {
	case domainLabel != "":
		w.Mix = append(w.Mix, JobClass{Name: "training over one maintenance domain", Weight: 0.1, Domain: true, Duration: Dist{Median: 24 * time.Hour, Spread: 0.5}, Checkpoint: time.Hour, Labels: JobKind("training")})
	default:
		if nodes >= 8 {
			w.Mix = append(w.Mix, JobClass{Name: "2-node training", Weight: 0.07, Nodes: 2, Duration: Dist{Median: 12 * time.Hour, Spread: 0.5}, Checkpoint: time.Hour, Labels: JobKind("training")})
		}
		if nodes >= 16 {
			w.Mix = append(w.Mix, JobClass{Name: "4-node training", Weight: 0.03, Nodes: 4, Duration: Dist{Median: 24 * time.Hour, Spread: 0.5}, Checkpoint: time.Hour, Labels: JobKind("training")})
		}
	}
	return w
}

// draDrivers is DRADrivers or its default.
func (w *Workload) draDrivers() []string {
	if len(w.DRADrivers) > 0 {
		return w.DRADrivers
	}
	return v1alpha1.DefaultDRADrivers
}

// gpusPerNode is GPUsPerNode or its default.
func (w *Workload) gpusPerNode() int {
	if w.GPUsPerNode > 0 {
		return w.GPUsPerNode
	}
	return defaultGPUsPerNode
}

// validate refuses a workload no job of which could be drawn or placed:
// a gang that can never fit would hold the free nodes it waits on for
// ever. nodes are the nodes present at the start; domains the size of
// each maintenance domain among them.
func (w *Workload) validate(nodes int, domains map[string]int) error {
	var errs []error
	g := w.gpusPerNode()
	if w.Utilization < 0 || w.Utilization > 1 {
		errs = append(errs, fmt.Errorf("utilization must be between 0 and 1, got %g", w.Utilization))
	}
	if w.ArrivalsPerHour < 0 {
		errs = append(errs, fmt.Errorf("arrivals per hour must not be negative, got %g", w.ArrivalsPerHour))
	}
	total := 0.0
	for _, c := range w.Mix {
		if c.Weight < 0 {
			errs = append(errs, fmt.Errorf("job class %q: negative weight", c.Name))
		}
		total += c.Weight
		for _, n := range c.GPUs {
			if n < 1 || n > g {
				errs = append(errs, fmt.Errorf("job class %q: %d GPUs on a node of %d", c.Name, n, g))
			}
		}
		switch {
		case c.Domain && (w.DomainLabel == "" || len(domains) == 0):
			errs = append(errs, fmt.Errorf("job class %q spans a maintenance domain, and no node carries the domain label %q", c.Name, w.DomainLabel))
		case !c.Domain && c.span() > nodes:
			errs = append(errs, fmt.Errorf("job class %q spans %d nodes, more than the %d there are", c.Name, c.span(), nodes))
		}
	}
	if total <= 0 {
		errs = append(errs, errors.New("no job class with a positive weight"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("simulate: workload: %w", errors.Join(errs...))
	}
	return nil
}

// meanGPUHours is the GPU-hours a job needs on average, over the mix;
// domains are the sizes of the maintenance domains a Domain job spans.
func (w *Workload) meanGPUHours(domains map[string]int) float64 {
	meanDomain := 0.0
	for _, n := range domains {
		meanDomain += float64(n) / float64(len(domains))
	}
	sum, weights := 0.0, 0.0
	for _, c := range w.Mix {
		gpus := float64(w.gpusPerNode())
		if len(c.GPUs) > 0 && !c.multiNode() {
			gpus = 0
			for _, n := range c.GPUs {
				gpus += float64(n) / float64(len(c.GPUs))
			}
		}
		nodes := float64(c.span())
		if c.Domain {
			nodes = meanDomain
		}
		// A log-normal's mean is its median × e^(σ²/2).
		hours := c.Duration.Median.Hours() * math.Exp(c.Duration.Spread*c.Duration.Spread/2)
		sum += c.Weight * gpus * nodes * hours
		weights += c.Weight
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// Describe says the workload in one line, for a rehearsal's report.
func (w *Workload) Describe() string {
	total := 0.0
	for _, c := range w.Mix {
		total += c.Weight
	}
	parts := make([]string, 0, len(w.Mix))
	for _, c := range w.Mix {
		ckpt := "never checkpoints"
		if c.Checkpoint > 0 {
			ckpt = "checkpoints every " + planner.ShortDuration(c.Checkpoint)
		}
		gpus := "whole nodes"
		if len(c.GPUs) > 0 && !c.multiNode() {
			counts := make([]string, len(c.GPUs))
			for k, n := range c.GPUs {
				counts[k] = fmt.Sprint(n)
			}
			gpus = strings.Join(counts, "/") + " GPUs"
		}
		if c.Claim != "" {
			gpus += " through DRA claims of " + c.Claim
		}
		parts = append(parts, fmt.Sprintf("%.0f%% %s (%s, ~%s, %s)", 100*c.Weight/total, c.Name, gpus, planner.ShortDuration(c.Duration.Median), ckpt))
	}
	return fmt.Sprintf("%.0f%% of %d GPUs a node busy: %s", 100*w.Utilization, w.gpusPerNode(), strings.Join(parts, ", "))
}

// WorkloadResult is what a run did to the jobs of its Workload. An
// interruption is a job's eviction by the rollout (a drain, or a driver
// swapped under it): it destroys, on every GPU the job holds on every
// node, the work done since its last checkpoint (since it started when it
// never checkpoints), and counts once however many of the job's nodes go.
type WorkloadResult struct {
	// GPUHoursDestroyed is the work destroyed, in GPU-hours.
	GPUHoursDestroyed float64 `json:"gpuHoursDestroyed"`
	// JobsInterrupted counts the jobs interrupted at least once, and
	// Interruptions every interruption.
	JobsInterrupted int `json:"jobsInterrupted"`
	Interruptions   int `json:"interruptions"`
	// MostMultiNodeInterruptions is the most times one job of several
	// nodes was interrupted: each time, all of its GPUs lost their work.
	MostMultiNodeInterruptions int `json:"mostMultiNodeInterruptions"`
	// DrainsWaited counts the drains that waited for the jobs
	// spec.evict.waitForCompletion names, and JobsWaitedFor the jobs
	// that finished while one waited (not evicted).
	DrainsWaited  int `json:"drainsWaited,omitempty"`
	JobsWaitedFor int `json:"jobsWaitedFor,omitempty"`
}

// check refuses a workload that could not play on nodes (see validate).
func (w *Workload) check(nodes []planner.Node) error {
	present, domains := 0, map[string]int{}
	for i := range nodes {
		if len(nodes[i].Labels) == 0 {
			continue // not in the cluster (yet): see World.Join
		}
		present++
		if v := nodes[i].Labels[w.DomainLabel]; w.DomainLabel != "" && v != "" {
			domains[v]++
		}
	}
	return w.validate(present, domains)
}
