package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/lint"
)

type lintOptions struct {
	dir       string
	output    string
	applyTime time.Duration
}

func newLintCommand(s Streams) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Find what hurts a Flux repository: plaintext Secrets, short timeouts, cycles, prune off",
		Long: `lint reads every YAML file of a Flux repository (one gpufleet rendered, or one
written by hand) and reports, with file, line and a suggested fix:

  error    plaintext-secret        a Secret with data that SOPS did not encrypt
  error    timeout-below-startup   a Kustomization timeout shorter than the start-up
                                   time of what it deploys (startup probes, or the
                                   gpufleet.io/startup annotation)
  error    depends-on-missing      dependsOn to a Kustomization no file defines
  error    depends-on-cycle        dependsOn in a cycle
  error    missing-resource        a kustomization.yaml lists a file that is missing
  warning  prune-off               objects removed from Git stay in the cluster
  warning  no-wait                 a dependency that neither waits nor has health checks
  warning  short-interval          an interval below one minute

It also prints the drift-repair time each interval implies: a change made by
hand is undone on average interval/2 + apply time later, at worst interval +
apply time. Exit 1 when there is an error finding.`,
		Example: `  gpufleet lint .
  gpufleet lint ./fleet-repo -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = "."
			if len(args) == 1 {
				o.dir = args[0]
			}
			if err := checkFormat(o.output, formatTable, formatJSON, formatYAML); err != nil {
				return err
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table, json or yaml")
	cmd.Flags().DurationVar(&o.applyTime, "apply-time", 30*time.Second, "how long one apply takes, for the drift-repair table")
	return cmd
}

func (o *lintOptions) run(_ context.Context, out io.Writer) error {
	rep, err := lint.Run(o.dir, lint.Options{ApplyTime: o.applyTime})
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, rep); err != nil {
			return err
		}
	} else {
		printLint(out, rep)
	}
	if rep.Errors() > 0 {
		return silentFailure{code: ExitFailed}
	}
	return nil
}

func printLint(out io.Writer, rep *lint.Report) {
	for _, f := range rep.Findings {
		fmt.Fprintln(out, f.String())
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(out)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KUSTOMIZATION\tINTERVAL\tDRIFT REPAIR (MEAN)\tDRIFT REPAIR (WORST)")
	for _, d := range rep.Drift {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Kustomization, d.Interval, d.Mean, d.Worst)
	}
	tw.Flush()
	fmt.Fprintf(out, "\n%d error(s), %d warning(s)\n", rep.Errors(), len(rep.Findings)-rep.Errors())
}
