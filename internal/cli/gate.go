package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/gate"
)

type gateOptions struct {
	fleetFile, wave, revision, kubeconfig, output string
	clusters                                      []string
	timeout                                       time.Duration
	concurrency                                   int
	// wait polls until the gate passes, for at most waitTimeout.
	wait                  bool
	waitTimeout, interval time.Duration
}

func newGateCommand(s Streams) *cobra.Command {
	o := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate [-f fleet.toml] (--wave W | --cluster C ...) [--revision SHA] [--timeout D] [--wait [--wait-timeout D]] [-o table|json|yaml]",
		Short: "Check that the live clusters of a wave converged on what the fleet file says; fail closed",
		Long: `gate connects to each cluster through its kubeconfig context (all clusters at
once, each within --timeout) and checks, without writing anything:

  flux           the Kustomizations (operators, config, lifecycle, the serving stack's)
                 are Ready, not suspended, at the expected git revision; the operators'
                 HelmReleases are Ready at the release's chart versions
  gpu-operator   the ClusterPolicy and each NVIDIADriver of the release are ready
  nodes          every GPU node of each pool reports the release's driver, is Ready,
                 has no active XID/ECC condition; quarantined nodes within the budget
  lifecycle      the cluster's DriverRollout completed, not Stalled, budget held;
                 CompletedWithFailures (a node rolled back or quarantined) fails

Each check shows expected against observed. The revision defaults to the HEAD
of the git repository holding the fleet file.

With --wait it looks again every --interval until every check passes or
--wait-timeout runs out, printing on stderr what each cluster still waits for
(the DriverRollout's nodes done of total, each check not passed) whenever it
changes; the report of the last look is printed at the end. Ctrl-C stops it
(exit 3: nothing was decided).

Exit codes: 0 every check passed; 1 a check failed (not healthy; with --wait,
still failing when the wait ran out); 3 a cluster could not be checked
(unreachable, context missing, timeout, interrupted). Never 0 unless every
cluster was checked.`,
		Example: `  gpufleet gate --wave staging
  gpufleet gate --wave prod-h100 --wait --wait-timeout 2h
  gpufleet gate --cluster prod-h100-a --revision $(git rev-parse HEAD) -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVar(&o.wave, "wave", "", "check every cluster of this wave")
	cmd.Flags().StringArrayVar(&o.clusters, "cluster", nil, "check this cluster (repeatable)")
	cmd.Flags().StringVar(&o.revision, "revision", "", "the git commit Flux must have applied (default: HEAD of the fleet repository)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "time allowed per cluster")
	cmd.Flags().IntVar(&o.concurrency, "concurrency", gate.DefaultConcurrency, "the most clusters read at once (each holds its client and what it read)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table, json or yaml")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "poll until every check passes (or --wait-timeout), printing what each cluster still waits for")
	cmd.Flags().DurationVar(&o.waitTimeout, "wait-timeout", 30*time.Minute, "with --wait: how long to wait in all")
	cmd.Flags().DurationVar(&o.interval, "interval", 5*time.Second, "with --wait: time between looks")
	_ = cmd.RegisterFlagCompletionFunc("wave", completeWaves)
	_ = cmd.RegisterFlagCompletionFunc("cluster", completeClusterFlag)
	return cmd
}

func (o *gateOptions) validate() error {
	if (o.wave == "") == (len(o.clusters) == 0) {
		return errors.New("give --wave or --cluster (not both)")
	}
	if o.output != formatTable && !machineFormat(o.output) {
		return fmt.Errorf("-o must be table, json or yaml, got %q", o.output)
	}
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if o.concurrency <= 0 {
		return errors.New("--concurrency must be at least 1")
	}
	if o.wait && (o.waitTimeout <= 0 || o.interval <= 0) {
		return errors.New("--wait-timeout and --interval must be positive")
	}
	return nil
}

func (o *gateOptions) run(ctx context.Context, out, errOut io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	clusters := o.clusters
	if o.wave != "" {
		i := f.WaveIndex(o.wave)
		if i < 0 {
			return withCode(ExitUsage, fmt.Errorf("unknown wave %q", o.wave))
		}
		clusters = f.Waves[i].Clusters
	}
	for _, c := range clusters {
		if _, ok := f.Clusters[c]; !ok {
			return withCode(ExitUsage, fmt.Errorf("unknown cluster %q", c))
		}
	}
	if o.revision == "" {
		if o.revision, err = gate.HeadRevision(filepath.Dir(o.fleetFile)); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	gopts := gate.Options{Fleet: f, Clusters: clusters, Revision: o.revision, Kubeconfig: o.kubeconfig, Timeout: o.timeout, Concurrency: o.concurrency, Now: time.Now}
	var rep *gate.Report
	var waitErr error
	if o.wait {
		rep, waitErr = o.waitFor(ctx, gopts, errOut)
	} else {
		// On a terminal, a wave of many clusters shows how far it has got;
		// a log or a pipe gets only the report.
		p := newProgress(errOut, len(clusters))
		gopts.Checked = func(name string) { p.step(name, "checked "+name) }
		rep = gate.Run(ctx, gopts)
		p.done()
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, struct {
			*gate.Report
			Verdict gate.Status `json:"verdict"`
		}{rep, rep.Verdict()}); err != nil {
			return err
		}
	} else {
		printGate(out, rep)
	}
	if errors.Is(waitErr, context.Canceled) {
		// Ctrl-C: nothing was decided, which is never a pass.
		fmt.Fprintln(errOut, "gpufleet: gate --wait interrupted")
		return silentFailure{code: ExitUnknown}
	}
	if waitErr != nil {
		fmt.Fprintf(errOut, "gpufleet: %v\n", waitErr)
	}
	switch rep.Verdict() {
	case gate.Pass:
		return nil
	case gate.Fail:
		return silentFailure{code: ExitFailed}
	default:
		return silentFailure{code: ExitUnknown}
	}
}

// waitFor polls the gate (gate.Wait), printing on errOut, as it changes,
// what each cluster still waits for.
func (o *gateOptions) waitFor(ctx context.Context, gopts gate.Options, errOut io.Writer) (*gate.Report, error) {
	start := time.Now()
	return gate.Wait(ctx, gate.WaitOptions{Options: gopts, Wait: o.waitTimeout, Interval: o.interval,
		Progress: func(_ *gate.Report, pending []gate.Pending) {
			elapsed := time.Since(start).Round(time.Second)
			for _, p := range pending {
				fmt.Fprintf(errOut, "[%s] %s\n", elapsed, p)
			}
		}})
}

func printGate(out io.Writer, rep *gate.Report) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tCHECK\tSTATUS\tEXPECTED\tOBSERVED\tMESSAGE")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Cluster, c.Name, c.Status, c.Expected, c.Observed, c.Message)
	}
	tw.Flush()
	verdict := map[gate.Status]string{gate.Pass: "PASS: every check passed", gate.Fail: "FAIL: not healthy", gate.Unknown: "UNKNOWN: could not check every cluster (fails the gate)"}
	fmt.Fprintf(out, "\ngate %s (%d checks, %d not passed, %s)\n", verdict[rep.Verdict()], len(rep.Checks), len(rep.Failed()), rep.Took.Round(time.Millisecond))
}
