package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/explain"
	"github.com/gpufleet/gpufleet/internal/gate"
)

type explainOptions struct {
	fleetFile, cluster, revision, kubeconfig, output string
	timeout                                          time.Duration
	verbose                                          bool
}

func newExplainCommand(s Streams) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain CLUSTER [-f fleet.toml] [--revision SHA] [-o text|json|yaml] [-v]",
		Short: "Say why a cluster does not run what git says: the first broken link and the command that fixes it",
		Long: `explain reads one cluster through its kubeconfig context, without writing
anything, and walks the chain that decides whether it runs what git says:

  source           the GitRepository is Ready and has fetched the expected revision
  kustomization    each Flux Kustomization (operators → config → lifecycle → the
                   serving stack) is not suspended, its dependsOn are Ready, its
                   health checks pass within a timeout no shorter than the
                   service's declared start-up, and it applied the revision
  application      on a cluster on Argo CD, instead of the two above: the root
                   Application (gpufleet) and gpu-stack exist, sync by themselves,
                   no sync runs or fails (the object it failed on), they are
                   Synced at the revision and Healthy (the resource that is not)
  helmRelease      the operators' HelmReleases are Ready at the release's charts
                   (with pre-rendered charts: the operators' Deployments)
  gpu-operator     the ClusterPolicy and the release's NVIDIADrivers are ready
  driver pods      no driver pod crash-loops or is stuck on a node not moving
  driverRollout    the DriverRollout is Completed; not Stalled, paused, or waiting
                   for the approval of its canary (then: the exact name to approve)
  nodes            each node's phase; a node held by someone else's cordon, NotReady,
                   failed, or reporting a GPU error is broken

It names the first broken link (or, when none is broken, the first still
progressing) with the object, its condition message and the next command.
A link the gate passes is ok here, so explain and gate agree. The revision
defaults to the HEAD of the git repository holding the fleet file.

Exit codes: 0 every link holds; 1 a link is broken or still progressing;
2 bad command line (an unknown cluster); 3 the cluster could not be read
(unreachable, context missing, timeout): never an answer.`,
		Example: `  gpufleet explain prod-h100-a
  gpufleet explain stg-h100 -v
  gpufleet explain prod-a100 --revision $(git rev-parse HEAD) -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cluster = args[0]
			if err := checkFormat(o.output, formatText, formatJSON, formatYAML); err != nil {
				return err
			}
			if o.timeout <= 0 {
				return withCode(ExitUsage, errors.New("--timeout must be positive"))
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVar(&o.revision, "revision", "", "the git commit Flux or Argo CD must have applied (default: HEAD of the fleet repository)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "time allowed to read the cluster")
	cmd.Flags().StringVarP(&o.output, "output", "o", formatText, "text, json or yaml")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list every link, not only those up to the first broken one")
	return cmd
}

func (o *explainOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	if _, ok := f.Clusters[o.cluster]; !ok {
		return withCode(ExitUsage, fmt.Errorf("unknown cluster %q (clusters: %s)", o.cluster, orList(f.ClusterNames())))
	}
	if o.revision == "" {
		if o.revision, err = gate.HeadRevision(filepath.Dir(o.fleetFile)); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	a, err := explain.Options{Fleet: f, Cluster: o.cluster, Revision: o.revision, Kubeconfig: o.kubeconfig, Timeout: o.timeout}.Run(ctx)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	if machineFormat(o.output) {
		err = writeDocument(out, o.output, a)
	} else {
		err = explain.WriteText(out, a, explain.TextOptions{Verbose: o.verbose})
	}
	if err != nil {
		return err
	}
	if a.Verdict != explain.Converged {
		return silentFailure{code: ExitFailed}
	}
	return nil
}
