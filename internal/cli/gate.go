package cli

import (
	"context"
	"encoding/json"
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
}

func newGateCommand(s Streams) *cobra.Command {
	o := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate [-f fleet.toml] (--wave W | --cluster C ...) [--revision SHA] [--timeout D] [-o table|json]",
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

Exit codes: 0 every check passed; 1 a check failed (not healthy); 3 a cluster
could not be checked (unreachable, context missing, timeout). Never 0 unless
every cluster was checked.`,
		Example: `  gpufleet gate --wave staging
  gpufleet gate --cluster prod-h100-a --revision $(git rev-parse HEAD) -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVar(&o.wave, "wave", "", "check every cluster of this wave")
	cmd.Flags().StringArrayVar(&o.clusters, "cluster", nil, "check this cluster (repeatable)")
	cmd.Flags().StringVar(&o.revision, "revision", "", "the git commit Flux must have applied (default: HEAD of the fleet repository)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "time allowed per cluster")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table or json")
	return cmd
}

func (o *gateOptions) validate() error {
	if (o.wave == "") == (len(o.clusters) == 0) {
		return errors.New("give --wave or --cluster (not both)")
	}
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("-o must be table or json, got %q", o.output)
	}
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

func (o *gateOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(o.fleetFile)
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
	rep := gate.Run(ctx, gate.Options{Fleet: f, Clusters: clusters, Revision: o.revision, Kubeconfig: o.kubeconfig, Timeout: o.timeout, Now: time.Now})
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			*gate.Report
			Verdict gate.Status `json:"verdict"`
		}{rep, rep.Verdict()}); err != nil {
			return err
		}
	} else {
		printGate(out, rep)
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
