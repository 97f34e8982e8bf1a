package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

type renderOptions struct {
	fleetFile string
	outDir    string
	check     bool
	verbose   bool
	output    string
	// format is the deprecated spelling of output.
	format string
	// chartSource overrides [charts] repository in the manifests mode.
	chartSource string
}

func newRenderCommand(s Streams) *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render [-f fleet.toml] [--output-dir DIR] [--check] [-v] [-o text|json|yaml]",
		Short: "Write every cluster's Flux folder from the fleet file",
		Long: `render writes, for each cluster of the fleet file, clusters/<cluster>/ with
three Flux Kustomizations chained by dependsOn (operators → config → lifecycle)
and a folder for each:

  operators/  HelmRepository and HelmReleases of the GPU and Network Operators
              at the versions of the release the cluster runs now
  config/     one NVIDIADriver per GPU pool and driver version
  lifecycle/  the DriverRollout that moves the cluster's nodes to its driver

Which release a cluster runs follows [promotion]. The output is deterministic
and written as one step: if anything fails, the previous output is left as it
was. Files that an earlier render wrote and this one does not are removed;
files render did not write are never touched.

It ends with one line per cluster that changed (files added, changed,
removed); -v lists the files.

With --check nothing is written: the command lists every file that would be
added, changed or removed and exits 1 if there is any (for CI in a fleet
repository), 0 when the output is up to date.

-o is the output format, as in kubectl (text, json or yaml); the folder is
--output-dir. The older spellings still work and say so on stderr: --format
for -o, and -o DIR (any value that is not a format) for --output-dir.`,
		Example: `  gpufleet render -f fleet.toml --output-dir .
  gpufleet render -v
  gpufleet render --check
  gpufleet render --check -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.settleFlags(cmd, s.Err); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVar(&o.outDir, "output-dir", "", "the folder to write into (default: the fleet file's folder)")
	cmd.Flags().BoolVar(&o.check, "check", false, "write nothing; exit 1 if the output is not up to date")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list every file added, changed or removed")
	cmd.Flags().StringVarP(&o.output, "output", "o", formatText, "text, json or yaml")
	cmd.Flags().StringVar(&o.format, "format", "", "deprecated: use -o")
	_ = cmd.Flags().MarkHidden("format")
	cmd.Flags().StringVar(&o.chartSource, "charts", "", `with [charts] mode = "manifests": a folder of charts (<chart>/<version>/), a .tgz, or a repository URL (default: [charts] repository)`)
	return cmd
}

// settleFlags maps the older spellings onto the current ones, each with a
// notice on stderr: --format was the output format, and -o was the output
// folder before it became the format (kubectl's meaning).
func (o *renderOptions) settleFlags(cmd *cobra.Command, errOut io.Writer) error {
	formats := []string{formatText, formatJSON, formatYAML}
	if cmd.Flags().Changed("output") && !slices.Contains(formats, o.output) {
		if o.outDir != "" {
			return fmt.Errorf("-o must be text, json or yaml, got %q (the folder is --output-dir)", o.output)
		}
		fmt.Fprintf(errOut, "gpufleet: -o DIR is deprecated: -o is the output format (text, json, yaml); use --output-dir %s\n", o.output)
		o.outDir, o.output = o.output, formatText
	}
	if cmd.Flags().Changed("format") {
		fmt.Fprintf(errOut, "gpufleet: --format is deprecated: use -o %s\n", o.format)
		if cmd.Flags().Changed("output") && o.output != o.format {
			return fmt.Errorf("--format %s and -o %s disagree (--format is the old spelling of -o)", o.format, o.output)
		}
		o.output = o.format
	}
	if !slices.Contains(formats, o.output) {
		return fmt.Errorf("-o must be text, json or yaml, got %q", o.output)
	}
	if o.outDir == "" {
		o.outDir = filepath.Dir(o.fleetFile)
	}
	return nil
}

func (o *renderOptions) run(ctx context.Context, out, errOut io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	// Rendering the charts of many releases takes a while: say which, on a
	// terminal.
	p := newProgress(errOut, chartVersions(f))
	opts, err := renderOptionsFor(ctx, f, o.chartSource, false, p)
	if err != nil {
		return err
	}
	rendered, err := render.RenderWith(f, opts)
	p.done()
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("render: %w", err))
	}
	if err := warnUnadopted(errOut, f, o.outDir); err != nil {
		return withCode(ExitUnknown, err)
	}
	var changes []render.Change
	if o.check {
		changes, err = render.Diff(rendered, o.outDir)
	} else {
		changes, err = render.Write(rendered, o.outDir)
	}
	if err != nil {
		return withCode(ExitFailed, err)
	}
	var diffs []promote.ObjectDiff
	if o.check {
		if diffs, err = checkDiffs(rendered, o.outDir, changes); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	if err := printChanges(out, o.output, changes, diffs, o.check, o.verbose); err != nil {
		return err
	}
	if o.check && len(changes) > 0 {
		fmt.Fprintf(errOut, "gpufleet: %d file(s) not up to date with %s: run `gpufleet render`\n", len(changes), o.fleetFile)
		return silentFailure{code: ExitFailed}
	}
	return nil
}

// warnUnadopted warns, once, about the clusters render writes for the first
// time in NVIDIADriver mode on a GPU Operator below v26.7.0 without an
// adopted install (render.NewUnadoptedClusters): right for a cluster
// without the operator, ruinous for one that runs it in ClusterPolicy mode,
// and nothing in the output folder tells which.
func warnUnadopted(errOut io.Writer, f *fleet.Fleet, dir string) error {
	names, err := render.NewUnadoptedClusters(f, dir)
	if err != nil || len(names) == 0 {
		return err
	}
	const most = 10
	list := strings.Join(names[:min(len(names), most)], ", ")
	if len(names) > most {
		list += fmt.Sprintf(" and %d more", len(names)-most)
	}
	fmt.Fprintf(errOut, "gpufleet: warning: first render of cluster(s) %s, with the GPU Operator below v26.7.0 managing drivers by NVIDIADriver: "+
		"if a cluster already runs the GPU Operator with its ClusterPolicy managing the drivers, applying this deletes every driver pod of that cluster at once; "+
		"adopt such a cluster with `gpufleet init` (it writes the cluster's [clusters.<name>.gpu-operator] table) before Flux applies this\n", list)
	return nil
}

// loadFleet loads the fleet file; invalid input is printed one problem per
// line (file:line:col: key: message) and fails with ExitFailed, an
// unreadable file with ExitUnknown; Ctrl-C stops it even mid-parse.
func loadFleet(ctx context.Context, path string) (*fleet.Fleet, error) {
	f, err := fleet.LoadContext(ctx, path)
	var probs fleet.Problems
	switch {
	case err == nil:
		return f, nil
	case errors.As(err, &probs):
		return nil, withCode(ExitFailed, fmt.Errorf("%d problem(s) in the fleet file:\n%w", len(probs), probs))
	default:
		return nil, withCode(ExitUnknown, err)
	}
}

// RenderResult is what render did (or, with --check, would do), as -o json
// and -o yaml print it.
type RenderResult struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Check      bool            `json:"check"`
	UpToDate   bool            `json:"upToDate"`
	Changes    []render.Change `json:"changes"`
	// Clusters counts the changes per cluster ("" for the files shared by
	// the clusters: apps/, infrastructure/).
	Clusters []ClusterChanges `json:"clusters"`
	// Diffs are, with --check, the objects that would change, each a
	// unified diff of what is on disk to what render writes.
	Diffs []promote.ObjectDiff `json:"diffs,omitempty"`
}

// checkDiffs reads what is on disk for each change and diffs it, object by
// object, against what render would write.
func checkDiffs(rendered *render.Output, dir string, changes []render.Change) ([]promote.ObjectDiff, error) {
	before, after := map[string][]byte{}, map[string][]byte{}
	for _, c := range changes {
		if c.Action != render.ActionAdd {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Path)))
			if err != nil {
				return nil, err
			}
			before[c.Path] = b
		}
		if c.Action != render.ActionRemove {
			after[c.Path] = rendered.Files[c.Path]
		}
	}
	return promote.ObjectDiffs(before, after), nil
}

// ClusterChanges counts one cluster's changed files.
type ClusterChanges struct {
	Cluster string `json:"cluster"`
	Added   int    `json:"added"`
	Changed int    `json:"changed"`
	Removed int    `json:"removed"`
}

// perCluster counts changes per cluster folder, in path order.
func perCluster(changes []render.Change) []ClusterChanges {
	out := []ClusterChanges{}
	index := map[string]int{}
	for _, c := range changes {
		name := ""
		if rest, ok := strings.CutPrefix(c.Path, "clusters/"); ok {
			name, _, _ = strings.Cut(rest, "/")
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, ClusterChanges{Cluster: name})
		}
		switch c.Action {
		case render.ActionAdd:
			out[i].Added++
		case render.ActionChange:
			out[i].Changed++
		case render.ActionRemove:
			out[i].Removed++
		}
	}
	return out
}

func printChanges(w io.Writer, format string, changes []render.Change, diffs []promote.ObjectDiff, check, verbose bool) error {
	if changes == nil {
		changes = []render.Change{}
	}
	if machineFormat(format) {
		return writeDocument(w, format, RenderResult{APIVersion: cliAPIVersion, Kind: "RenderResult", Check: check, UpToDate: len(changes) == 0, Changes: changes, Clusters: perCluster(changes), Diffs: diffs})
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "up to date")
		return nil
	}
	verb := map[string]string{render.ActionAdd: "add", render.ActionChange: "change", render.ActionRemove: "remove"}
	if !check {
		verb = map[string]string{render.ActionAdd: "added", render.ActionChange: "changed", render.ActionRemove: "removed"}
	}
	// --check lists the files always: CI logs are read for them.
	if verbose || check {
		for _, c := range changes {
			fmt.Fprintf(w, "%-8s %s\n", verb[c.Action], c.Path)
		}
	}
	var parts []string
	for _, c := range perCluster(changes) {
		name := c.Cluster
		if name == "" {
			name = "shared (apps/, infrastructure/)"
		}
		var counts []string
		for _, n := range []struct {
			n    int
			verb string
		}{{c.Added, verb[render.ActionAdd]}, {c.Changed, verb[render.ActionChange]}, {c.Removed, verb[render.ActionRemove]}} {
			if n.n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n.n, n.verb))
			}
		}
		parts = append(parts, name+": "+strings.Join(counts, ", "))
	}
	what := "rendered"
	if check {
		what = "not up to date"
	}
	// Each changed object's diff, before the summary that ends the output.
	changed := slices.DeleteFunc(slices.Clone(diffs), func(d promote.ObjectDiff) bool { return d.Action != render.ActionChange })
	printObjectDiffs(w, changed)
	if len(changed) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s: %d file(s) (%s)", what, len(changes), strings.Join(parts, "; "))
	if !verbose && !check {
		fmt.Fprint(w, "; -v lists them")
	}
	fmt.Fprintln(w)
	return nil
}

// renderOptionsFor gives render the operator charts when the fleet renders
// them to manifests: from source, or else the fleet's [charts] repository
// (strict: see chartsOf). Each chart loaded is reported on p, when given.
func renderOptionsFor(ctx context.Context, f *fleet.Fleet, source string, strict bool, p *progress) (render.Options, error) {
	if f.Charts.Mode != fleet.ModeManifests {
		return render.Options{}, nil
	}
	src, err := chartSource(source, "", "", chartsOf(f, strict))
	if err != nil {
		return render.Options{}, withCode(ExitUnknown, err)
	}
	if p != nil {
		src = withProgress(src, p)
	}
	return chartRenderOptions(ctx, f, src), nil
}

// chartRenderOptions renders the operator charts from src in manifests mode.
func chartRenderOptions(ctx context.Context, f *fleet.Fleet, src charts.Source) render.Options {
	if f.Charts.Mode != fleet.ModeManifests {
		return render.Options{}
	}
	return render.Options{Charts: charts.Renderer{Ctx: ctx, Src: src}}
}
