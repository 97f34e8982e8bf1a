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
)

type simulateOptions struct {
	fleetFile string
	cluster   string
	release   string
	nodes     int
	seed      uint64
	failRate  float64
	xidRate   float64
	start     string
	svg       string
	output    string
	verbose   bool
	// compare: rehearse both actuators side by side.
	compare bool

	startTime time.Time
	// failRateSet: --fail-rate was given; otherwise a release marked
	// expect-failure (a drill) fails every install.
	failRateSet bool
}

func newSimulateCommand(s Streams) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate [-f fleet.toml] [--cluster C] [--nodes N] [--seed S]",
		Short: "Rehearse a cluster's node rollout policy on a simulated fleet",
		Long: `simulate runs the lifecycle controller's planner against a simulated cluster,
with time compressed, and reports what a platform lead wants to know before a
change window: how long the driver rollout takes, how close that is to the
shortest rollout the policy allows, how many nodes end done, rolled back or
quarantined, whether the failure budget held, and when maintenance windows,
freezes or the wait for approval held it.

The policy is the cluster's resolved node rollout policy; the nodes are the
cluster's GPU pools (or --nodes). The rollout is the DriverRollout render writes
for the cluster once the release reaches it: --release, else the release being
rolled out (with none, simulate says what to pass). The approval is assumed to
be given as soon as the rollout asks for it. Drain, install and report times are drawn
from plausible distributions with --seed; --fail-rate and --xid-rate inject
install failures and XID errors (a release marked expect-failure fails every
install unless --fail-rate says otherwise).

--compare rehearses the same policy twice, once with each actuator (gpufleet
moving the nodes itself; the GPU Operator's own upgrade controller, gated node
by node), on the same nodes and seed, and prints them side by side with what the
operator's path cannot do: no per-node rollback (the driver DaemonSet has one
version; going back means reverting the release for the pool), quarantine only
by label and taint.

Without --cluster every cluster is rehearsed. --svg writes a timeline picture:
one row per node, coloured by phase, with the times nodes may start shaded.`,
		Example: `  gpufleet simulate -f fleet.toml --cluster prod-h100-b
  gpufleet simulate --cluster prod-h100-b --nodes 500 --fail-rate 0.01 --svg rollout.svg
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
	f.StringVar(&o.start, "start", "", "when the rollout starts, RFC 3339 (default: now)")
	f.StringVar(&o.svg, "svg", "", "write a timeline picture to this file (one cluster only)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also print every transition with its reason")
	f.BoolVar(&o.compare, "compare", false, "rehearse both actuators (gpufleet, gpu-operator) with the same policy, side by side, and say what the operator's path cannot do")
	return cmd
}

func (o *simulateOptions) validate() error {
	var errs []error
	if o.output != formatTable && !machineFormat(o.output) {
		errs = append(errs, fmt.Errorf("-o must be table, json or yaml, got %q", o.output))
	}
	if o.nodes < 0 || o.nodes > 100000 {
		errs = append(errs, fmt.Errorf("--nodes must be between 1 and 100000, got %d", o.nodes))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"--fail-rate", o.failRate}, {"--xid-rate", o.xidRate}} {
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
	f, err := loadFleet(o.fleetFile)
	if err != nil {
		return err
	}
	if o.compare {
		return o.runCompare(ctx, out, rehearse.Options{
			Fleet: f, FleetFile: o.fleetFile, Cluster: o.cluster, Release: o.release,
			Nodes: o.nodes, Seed: o.seed, FailRate: o.failRate, XIDRate: o.xidRate, FailRateSet: o.failRateSet,
			Start: o.startTime, Timeline: o.svg != "",
		})
	}
	all, err := rehearse.Options{
		Fleet: f, FleetFile: o.fleetFile, Cluster: o.cluster, Release: o.release,
		Nodes: o.nodes, Seed: o.seed, FailRate: o.failRate, XIDRate: o.xidRate, FailRateSet: o.failRateSet,
		Start: o.startTime, Record: o.svg != "" || o.verbose, Timeline: o.svg != "",
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
