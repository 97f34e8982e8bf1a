package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
)

type validateOptions struct {
	fleetFile   string
	chartsDir   string
	repo        string
	output      string
	kubeVersion string
	cacheDir    string
}

func newValidateCommand(s Streams) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [-f fleet.toml] [--charts DIR | --repo URL] [-o table|json|yaml]",
		Short: "Check every release's operator charts and gpufleet's own objects against the CRDs of that exact version",
		Long: `validate renders, for every release in the fleet file, the GPU Operator and
Network Operator charts at that release's versions with the values gpufleet
installs them with, and checks every custom resource they create against the
CRDs shipped in those chart versions, the way the API server would: nulls
dropped, defaults applied, then types, required fields, enums, patterns,
unknown fields and CEL rules. A field that exists in another version of the
chart says so. No cluster is needed.

The objects gpufleet renders itself (NVIDIADrivers, operator objects in the
manifests mode) are checked for every release as if each cluster ran it,
also a release no cluster runs yet, and as written: without the defaults the
API server would fill in, as offline checks such as kubeconform see them.

Charts come from --charts (a folder laid out as <chart>/<version>/, or one
.tgz), --repo (a Helm repository URL or an oci:// reference), or else the
fleet file's [charts] repository. Downloads are cached under the user's
cache directory.

A cluster adopted with its Helm release's own values ([clusters.<name>.gpu-operator]
values) has the chart rendered with them merged under gpufleet's, at every
release's version, and checked against the chart's values.schema.json as Helm
would: values a chart refuses are a problem, naming the clusters.

Exit codes: 0 all valid, 1 problems found, 2 bad command line, 3 a chart
could not be found, read or rendered (and no problem was found elsewhere).`,
		Example: `  gpufleet validate --charts ../operators
  gpufleet validate -f fleet.toml --repo https://helm.ngc.nvidia.com/nvidia -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	addChartSourceFlags(cmd, &o.chartsDir, &o.repo, &o.cacheDir)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().StringVar(&o.kubeVersion, "kube-version", charts.DefaultKubeVersion, "the Kubernetes version charts are rendered for")
	return cmd
}

func addChartSourceFlags(cmd *cobra.Command, dir, repo, cache *string) {
	cmd.Flags().StringVar(dir, "charts", "", "a folder of charts laid out as <chart>/<version>/, or a chart .tgz")
	cmd.Flags().StringVar(repo, "repo", "", "a Helm repository URL or oci:// reference (default: the fleet file's)")
	cmd.Flags().StringVar(cache, "cache-dir", "", "where downloaded charts are kept (default: the user's cache directory)")
}

func (o *validateOptions) validate() error {
	if o.chartsDir != "" && o.repo != "" {
		return errors.New("--charts and --repo cannot be used together")
	}
	if o.output != formatTable && !machineFormat(o.output) {
		return fmt.Errorf("-o must be table, json or yaml, got %q", o.output)
	}
	return nil
}

func (o *validateOptions) run(ctx context.Context, out, errOut io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	src, err := chartSource(o.chartsDir, o.repo, o.cacheDir, chartsOf(f, false))
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	// Many releases take a while: say which chart is loaded, on a terminal.
	p := newProgress(errOut, chartVersions(f))
	defer p.done()
	src = withProgress(src, p)
	// The objects gpufleet writes are rendered as render would write them,
	// with the same charts in the manifests mode, for every release.
	report, err := charts.FleetCheck{Fleet: f, Source: src, KubeVersion: o.kubeVersion, Render: chartRenderOptions(ctx, f, src)}.Run(ctx)
	if err != nil {
		return withCode(ExitFailed, err)
	}
	if err := printReport(out, errOut, o.output, report, len(f.ReleaseNames())); err != nil {
		return err
	}
	refused, _ := splitFailures(report.Failures)
	switch {
	case len(report.Findings) > 0 || len(refused) > 0:
		return silentFailure{code: ExitFailed}
	case len(report.Failures) > 0:
		return silentFailure{code: ExitUnknown}
	}
	return nil
}

// splitFailures tells the charts that refused their values (a cluster's
// own values, or gpufleet's, that the chart's values.schema.json says are
// wrong: a problem found, as Helm would refuse them) from the checks that
// could not be done.
func splitFailures(fs []charts.Failure) (refused, notChecked []charts.Failure) {
	for _, f := range fs {
		if f.ValuesRefused {
			refused = append(refused, f)
		} else {
			notChecked = append(notChecked, f)
		}
	}
	return refused, notChecked
}

// chartVersions counts the distinct operator chart versions of the fleet
// file's releases: the charts validate loads.
func chartVersions(f *fleet.Fleet) int {
	seen := map[string]bool{}
	for _, r := range f.Releases {
		seen["gpu-operator@"+r.GPUOperator] = true
		if r.RunsNetworkOperator() { // a release may run none
			seen["network-operator@"+r.NetworkOperator] = true
		}
	}
	return len(seen)
}

// fleetCharts is where the fleet file says the operator charts are, and
// the folder a chart folder it names must stay in (charts.Options.Root).
type fleetCharts struct{ ref, root string }

// chartsOf reads [charts] repository of f. A folder the fleet file names
// relative to itself is in the fleet repository: nothing outside the
// repository is read for it. strict (verify, the check a pull request
// runs) confines an absolute folder to the repository too: there the
// fleet file is the change's, not the operator's.
func chartsOf(f *fleet.Fleet, strict bool) fleetCharts {
	fc := fleetCharts{ref: f.Charts.Repository}
	if f.Charts.InRepository || (strict && filepath.IsAbs(fc.ref)) {
		fc.root = fsutil.RepositoryRoot(filepath.Dir(f.Path))
	}
	return fc
}

// chartSource picks the source the flags name (the operator's, read where
// they point), else the fleet file's.
func chartSource(dir, repo, cache string, fc fleetCharts) (charts.Source, error) {
	ref, root := fc.ref, fc.root
	switch {
	case dir != "":
		ref, root = dir, ""
	case repo != "":
		ref, root = repo, ""
	}
	if ref == "" {
		ref = fleet.DefaultChartRepository
	}
	return charts.NewSource(ref, charts.Options{CacheDir: cache, Root: root})
}

func printReport(out, errOut io.Writer, format string, r *charts.Report, releases int) error {
	if machineFormat(format) {
		return writeDocument(out, format, struct {
			OK bool `json:"ok"`
			*charts.Report
		}{len(r.Findings) == 0 && len(r.Failures) == 0, r})
	}
	for _, n := range r.Notes {
		fmt.Fprintf(errOut, "note: %s\n", n)
	}
	if len(r.Findings) == 0 && len(r.Failures) == 0 {
		fmt.Fprintf(out, "ok: %d custom resource(s) in %d release(s) valid\n", r.Objects, releases)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tCHART\tOBJECT\tPROBLEM\tFROM")
	findings := append([]charts.Finding(nil), r.Findings...)
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].Release < findings[j].Release })
	for _, f := range findings {
		chart := "-"
		if f.Chart != "" {
			chart = f.Chart + " " + f.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Release, chart, f.Object(), f.Message(), f.Origin)
	}
	refused, notChecked := splitFailures(r.Failures)
	for _, f := range refused {
		from := "-"
		if len(f.Clusters) > 0 {
			from = "values of " + strings.Join(f.Clusters, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s %s\t-\tvalues refused: %s\t%s\n", f.Release, f.Chart, f.Version, f.Error, from)
	}
	for _, f := range notChecked {
		fmt.Fprintf(tw, "%s\t%s %s\t-\tcould not check: %s\t-\n", f.Release, f.Chart, f.Version, f.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "gpufleet: %d problem(s), %d chart(s) not checked\n", len(r.Findings)+len(refused), len(notChecked))
	return nil
}
