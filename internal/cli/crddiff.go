package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

type crdDiffOptions struct {
	fleetFile string
	chartsDir string
	repo      string
	cacheDir  string
	output    string

	chart, from, to string
}

func newCRDDiffCommand(s Streams) *cobra.Command {
	o := &crdDiffOptions{}
	cmd := &cobra.Command{
		Use:   "crd-diff CHART VERSION_A VERSION_B [--charts DIR | --repo URL] [-o table|json|yaml]",
		Short: "List the CRD schema changes between two versions of an operator chart",
		Long: `crd-diff loads CHART at VERSION_A and VERSION_B and lists, for each CRD kind
and version it ships, the schema paths added, removed or changed from A to B:
type, format, enum, default, pattern, required, bounds (minimum, maximum,
lengths, item counts), CEL rules (x-kubernetes-validations), pruning and list
types. "[]" stands for the items of a list, "{*}" for the values of a map and
"." for the object itself.

Charts come from --charts, --repo, or else the fleet file's [charts]
repository. Exit codes: 0 listed (changes or not), 2 bad command line, 3 a
chart could not be found or read.`,
		Example: `  gpufleet crd-diff gpu-operator v25.10.1 v26.7.0 --charts ../operators`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 3 {
				return withCode(ExitUsage, fmt.Errorf("want CHART VERSION_A VERSION_B, got %d argument(s)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chart, o.from, o.to = args[0], args[1], args[2]
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file, read for its chart repository when neither --charts nor --repo is given")
	addChartSourceFlags(cmd, &o.chartsDir, &o.repo, &o.cacheDir)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func (o *crdDiffOptions) validate() error {
	if o.chartsDir != "" && o.repo != "" {
		return errors.New("--charts and --repo cannot be used together")
	}
	if o.output != formatTable && !machineFormat(o.output) {
		return fmt.Errorf("-o must be table, json or yaml, got %q", o.output)
	}
	return nil
}

func (o *crdDiffOptions) run(ctx context.Context, out io.Writer) error {
	var fc fleetCharts
	if o.chartsDir == "" && o.repo == "" {
		if _, err := os.Stat(o.fleetFile); err == nil {
			f, err := loadFleet(ctx, o.fleetFile)
			if err != nil {
				return err
			}
			fc = chartsOf(f, false)
		}
	}
	src, err := chartSource(o.chartsDir, o.repo, o.cacheDir, fc)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	changes, err := charts.DiffCRDs(ctx, src, o.chart, o.from, o.to)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	return printCRDChanges(out, o.output, changes)
}

func printCRDChanges(w io.Writer, format string, changes []crdcheck.Change) error {
	if machineFormat(format) {
		return writeDocument(w, format, map[string]any{"changes": changes})
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "no schema changes")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tVERSION\tCHANGE\tPATH\tDETAIL")
	for _, c := range changes {
		p := c.Path
		if p == "" {
			p = "-"
		}
		v := c.Version
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\t%s\n", c.Kind, c.Group, v, c.Op, p, c.Detail)
	}
	return tw.Flush()
}
