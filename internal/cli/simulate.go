package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/rehearse"
	"github.com/gpufleet/gpufleet/internal/sim"
)

type simulateOptions struct {
	fleetFile string
	cluster   string
	release   string
	nodes     int
	seed      uint64
	failRate  float64
	xidRate   float64
	// utilization: the share of the GPUs simulated jobs hold; 0 runs none.
	utilization float64
	start       string
	svg         string
	output      string
	verbose     bool
	// compare: rehearse gpufleet in both orders and the operator side by side.
	compare bool
	// dra: the jobs hold their GPUs through DRA claims (rehearse.Options.DRA).
	dra bool

	startTime time.Time
	// failRateSet: --fail-rate was given; otherwise a release marked
	// expect-failure (a drill) fails every install.
	failRateSet bool
}

func newSimulateCommand(s Streams) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate [-f fleet.toml] [--cluster C] [--nodes N] [--seed S] [--utilization U]",
		Short: "Rehearse a cluster's node rollout policy on a simulated fleet",
		Long: `simulate runs the lifecycle controller's planner against a simulated cluster,
with time compressed, and reports what a platform lead wants to know before a
change window: how long the driver rollout takes, how close that is to the
shortest rollout the policy allows, how many nodes end done, rolled back or
quarantined, whether the failure budget held, when maintenance windows,
freezes or the wait for approval held it, and how much GPU work it destroys.

The policy is the cluster's resolved node rollout policy; the nodes are the
cluster's GPU pools (or --nodes). The rollout is the DriverRollout render writes
for the cluster once the release reaches it: --release, else the release being
rolled out (with none, simulate says what to pass). The approval is assumed to
be given as soon as the rollout asks for it. Drain, install and report times are drawn
from plausible distributions with --seed; --fail-rate and --xid-rate inject
install failures and XID errors (a release marked expect-failure fails every
install unless --fail-rate says otherwise). A policy's maintenance domain is
rehearsed on nodes labelled into domains as GPU Feature Discovery labels them:
each pool's nodes in consecutive groups of domain-size.

The nodes run GPU jobs while the rollout goes over them: --utilization of their
GPUs (8 a node) busy with a training cluster's mix of single-node jobs, some
never checkpointing, and jobs of several nodes (of a whole maintenance domain
where the policy names one), simulated, drawn from --seed like everything else.
A drain evicts the jobs on its node; "destroyed" is the work each evicted job
did since its last checkpoint (since it started, if it never checkpoints), times
the GPUs it holds on all its nodes, in GPU-hours; an evicted job starts again
from its checkpoint. --utilization 0 runs no jobs: idle nodes, nothing destroyed.
With --dra the same jobs hold their GPUs through ResourceClaims of NVIDIA's DRA
driver instead of nvidia.com/gpu requests (as on a cluster that allocates GPUs
with DRA); the policy's dra-drivers say which drivers' claims are GPUs.

--compare rehearses the same policy on the same nodes, seed and jobs in three
ways and prints them side by side: gpufleet moving the nodes itself, cheapest
first (the nodes whose drain destroys the least work start first); gpufleet
in a fixed node-name order, blind to the jobs (what the planner did before it
saw GPU pods); and the GPU Operator's own upgrade controller, gated node by
node, which takes the nodes in its own order whatever runs on them. A line
under the table says what cheapest-first saves against the fixed order. With
--utilization 0 the two orders are the same and only the two actuators are
shown. Then it says what the operator's path cannot do: no per-node rollback
(the driver DaemonSet has one version; going back means reverting the release
for the pool), quarantine only by label and taint.

When the release moves the Network Operator's OFED driver too (it names an
ofed-driver and a pool has managed-nics), --compare adds two columns: gpufleet
moving both drivers in one maintenance per node (OFED first, then the GPU
driver, one cordon and drain), and the same move as two separate rollouts
(OFED alone first, then the GPU driver with OFED unchanged), with the same
policy, seed and jobs. The row "drains per node" says how many times each
node was drained (mean, max); makespan and the work destroyed add both
rollouts up.

Without --cluster every cluster is rehearsed. --svg writes a timeline picture:
one row per node, coloured by phase, with the times nodes may start shaded.`,
		Example: `  gpufleet simulate -f fleet.toml --cluster prod-h100-b
  gpufleet simulate --cluster prod-h100-b --nodes 500 --fail-rate 0.01 --svg rollout.svg
  gpufleet simulate --cluster prod-h100-b --compare
  gpufleet simulate --cluster prod-h100-b --compare --dra
  gpufleet simulate --cluster prod-h100-b --utilization 0
  gpufleet simulate -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.failRateSet = cmd.Flags().Changed("fail-rate")
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	f.StringVar(&o.cluster, "cluster", "", "the cluster to rehearse (default: every cluster)")
	f.StringVar(&o.release, "release", "", "rehearse moving to this release (default: the one being rolled out)")
	_ = cmd.RegisterFlagCompletionFunc("cluster", completeClusterFlag)
	_ = cmd.RegisterFlagCompletionFunc("release", completeReleaseFlag)
	f.IntVar(&o.nodes, "nodes", 0, "simulate this many GPU nodes instead of the cluster's pools")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random durations and failures")
	f.Float64Var(&o.failRate, "fail-rate", 0, "chance that the new driver fails to install on a node (0-1)")
	f.Float64Var(&o.xidRate, "xid-rate", 0, "chance that a node raises an XID during its soak (0-1)")
	f.Float64Var(&o.utilization, "utilization", 0.85, "share of the GPUs busy with simulated jobs whose work the rollout may destroy (0-1; 0: idle nodes)")
	f.StringVar(&o.start, "start", "", "when the rollout starts, RFC 3339 (default: now)")
	f.StringVar(&o.svg, "svg", "", "write a timeline picture to this file (one cluster only)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also print every transition with its reason")
	f.BoolVar(&o.compare, "compare", false, "rehearse gpufleet (cheapest nodes first), gpufleet in node-name order and the gpu-operator actuator with the same policy and jobs, side by side, and say what the operator's path cannot do; a release moving OFED too adds both drivers in one maintenance against two separate rollouts")
	f.BoolVar(&o.dra, "dra", false, "the simulated jobs hold their GPUs through ResourceClaims of NVIDIA's DRA driver (gpu.nvidia.com) instead of nvidia.com/gpu requests, as on a cluster that allocates GPUs with DRA")
	return cmd
}

func (o *simulateOptions) validate() error {
	var errs []error
	if o.output != formatTable && !machineFormat(o.output) {
		errs = append(errs, fmt.Errorf("-o must be table, json or yaml, got %q", o.output))
	}
	if o.dra && o.utilization == 0 {
		errs = append(errs, errors.New("--dra says how the simulated jobs hold their GPUs, and --utilization 0 runs none"))
	}
	if o.nodes < 0 || o.nodes > 100000 {
		errs = append(errs, fmt.Errorf("--nodes must be between 1 and 100000, got %d", o.nodes))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"--fail-rate", o.failRate}, {"--xid-rate", o.xidRate}, {"--utilization", o.utilization}} {
		if r.v < 0 || r.v > 1 {
			errs = append(errs, fmt.Errorf("%s must be between 0 and 1, got %g", r.name, r.v))
		}
	}
	o.startTime = time.Now().UTC().Truncate(time.Minute)
	if o.start != "" {
		t, err := time.Parse(time.RFC3339, o.start)
		if err != nil {
			errs = append(errs, fmt.Errorf("--start: %w", err))
		}
		o.startTime = t
	}
	return errors.Join(errs...)
}

func (o *simulateOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	if o.compare {
		return o.runCompare(ctx, out, rehearse.Options{
			Fleet: f, FleetFile: o.fleetFile, Cluster: o.cluster, Release: o.release,
			Nodes: o.nodes, Seed: o.seed, FailRate: o.failRate, XIDRate: o.xidRate, FailRateSet: o.failRateSet,
			Start: o.startTime, Timeline: o.svg != "", Utilization: o.utilization, DRA: o.dra,
		})
	}
	all, err := rehearse.Options{
		Fleet: f, FleetFile: o.fleetFile, Cluster: o.cluster, Release: o.release,
		Nodes: o.nodes, Seed: o.seed, FailRate: o.failRate, XIDRate: o.xidRate, FailRateSet: o.failRateSet,
		Start: o.startTime, Record: o.svg != "" || o.verbose, Timeline: o.svg != "", Utilization: o.utilization, DRA: o.dra,
	}.Run(ctx)
	var input *rehearse.InputError
	switch {
	case errors.As(err, &input):
		return withCode(ExitUsage, err)
	case err != nil:
		return withCode(ExitFailed, err)
	}
	if o.svg != "" {
		if err := writeSVG(o.svg, &all[0]); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, all); err != nil {
			return err
		}
	} else {
		for i := range all {
			if i > 0 {
				fmt.Fprintln(out)
			}
			printRehearsal(out, all[i])
			if o.verbose {
				fmt.Fprintln(out)
				fmt.Fprint(out, all[i].Transcript())
			}
		}
	}
	if err := rehearse.Unfinished(all); err != nil {
		return withCode(ExitFailed, err)
	}
	return nil
}

// runCompare rehearses both actuators and prints them side by side (or as
// a document with -o).
func (o *simulateOptions) runCompare(ctx context.Context, out io.Writer, opts rehearse.Options) error {
	all, err := opts.Compare(ctx)
	var input *rehearse.InputError
	switch {
	case errors.As(err, &input):
		return withCode(ExitUsage, err)
	case err != nil:
		return withCode(ExitFailed, err)
	}
	if machineFormat(o.output) {
		err = writeDocument(out, o.output, all)
	} else {
		err = rehearse.WriteComparisons(out, all)
	}
	if err != nil {
		return err
	}
	if err := rehearse.UnfinishedComparisons(all); err != nil {
		return withCode(ExitFailed, err)
	}
	return nil
}

func printRehearsal(out io.Writer, r rehearse.Rehearsal) {
	rep := r.Report
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	when := func(t time.Time) string { return t.UTC().Format("Mon 2006-01-02 15:04 MST") }
	fmt.Fprintf(tw, "cluster\t%s: %d nodes, driver %s → %s\n", r.Cluster, rep.Nodes, r.Previous, r.Target)
	fmt.Fprintf(tw, "rollout\t%s, as render writes it\n", r.Rollout)
	fmt.Fprintf(tw, "policy\t%s\n", r.Policy)
	fmt.Fprintf(tw, "outcome\t%s: %s\n", rep.Outcome, rep.Reason)
	fmt.Fprintf(tw, "makespan\t%s (%s → %s)\n", rehearse.ShortDuration(time.Duration(rep.Makespan)), when(rep.Start), when(rep.End))
	fmt.Fprintf(tw, "lower bound\t%s, efficiency %.0f%% (every slot busy whenever a window is open and no freeze holds)\n", rehearse.ShortDuration(time.Duration(rep.LowerBound)), 100*rep.Efficiency)
	fmt.Fprintf(tw, "nodes\t%d done, %d rolled back, %d quarantined, %d untouched\n", rep.Done, rep.RolledBack, rep.Quarantined, rep.Untouched)
	held := "held"
	if !rep.BudgetHeld {
		held = "EXHAUSTED: the rollout stopped"
	}
	fmt.Fprintf(tw, "budget\t%d of %d failures: %s\n", rep.Failures, rep.Budget, held)
	if w := rep.Workload; w != nil {
		fmt.Fprintf(tw, "workload\t%s\n", r.Workload)
		fmt.Fprintf(tw, "destroyed\t%s\n", describeDestroyed(w))
	}
	var total time.Duration
	for _, h := range rep.Held {
		total += h.To.Sub(h.From)
	}
	switch len(rep.Held) {
	case 0:
		fmt.Fprintf(tw, "held\tnever\n")
	default:
		fmt.Fprintf(tw, "held\t%d times, %s in all\n", len(rep.Held), rehearse.ShortDuration(total))
	}
	// The first holds say most (the wait for the first window, approval);
	// a long rollout's weekly pattern needs no more lines.
	const shown = 6
	for i, h := range rep.Held {
		if i == shown {
			fmt.Fprintf(tw, "\t… and %d more\n", len(rep.Held)-shown)
			break
		}
		what := string(h.Phase)
		if h.Freeze != "" {
			what += " (" + h.Freeze + ")"
		}
		fmt.Fprintf(tw, "\t%s %s → %s (%s)\n", what, when(h.From), when(h.To), rehearse.ShortDuration(h.To.Sub(h.From)))
	}
	tw.Flush()
}

func writeSVG(path string, r *rehearse.Rehearsal) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	if err := r.Timeline(fh); err != nil {
		fh.Close()
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}

// describeDestroyed says in one line what a rollout destroyed of the jobs
// on its nodes.
func describeDestroyed(w *sim.WorkloadResult) string {
	multi := "no job of several nodes interrupted"
	if w.MostMultiNodeInterruptions > 0 {
		multi = "a job of several nodes at most " + plural(w.MostMultiNodeInterruptions, "time")
	}
	return fmt.Sprintf("%.1f GPU-hours: the work evicted jobs did since their last checkpoints (%s interrupted, %s; %s)",
		w.GPUHoursDestroyed, plural(w.JobsInterrupted, "job"), plural(w.Interruptions, "interruption"), multi)
}

// plural writes n with word, an s added unless n is one.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
