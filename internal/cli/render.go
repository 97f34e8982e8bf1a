package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

type renderOptions struct {
	fleetFile string
	outDir    string
	check     bool
	format    string
	// chartSource overrides [charts] repository in the manifests mode.
	chartSource string
}

func newRenderCommand(s Streams) *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render [-f fleet.toml] [-o DIR] [--check]",
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

With --check nothing is written: the command lists every file that would be
added, changed or removed and exits 1 if there is any (for CI in a fleet
repository), 0 when the output is up to date.`,
		Example: `  gpufleet render -f fleet.toml -o .
  gpufleet render --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVarP(&o.outDir, "output-dir", "o", "", "the folder to write into (default: the fleet file's folder)")
	cmd.Flags().BoolVar(&o.check, "check", false, "write nothing; exit 1 if the output is not up to date")
	cmd.Flags().StringVar(&o.format, "format", "text", "how to list changes: text or json")
	cmd.Flags().StringVar(&o.chartSource, "charts", "", `with [charts] mode = "manifests": a folder of charts (<chart>/<version>/), a .tgz, or a repository URL (default: [charts] repository)`)
	return cmd
}

func (o *renderOptions) validate() error {
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("--format must be text or json, got %q", o.format)
	}
	if o.outDir == "" {
		o.outDir = filepath.Dir(o.fleetFile)
	}
	return nil
}

func (o *renderOptions) run(ctx context.Context, out, errOut io.Writer) error {
	f, err := loadFleet(o.fleetFile)
	if err != nil {
		return err
	}
	opts, err := renderOptionsFor(ctx, f, o.chartSource)
	if err != nil {
		return err
	}
	rendered, err := render.RenderWith(f, opts)
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("render: %w", err))
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
	if err := printChanges(out, o.format, changes, o.check); err != nil {
		return err
	}
	if o.check && len(changes) > 0 {
		fmt.Fprintf(errOut, "gpufleet: %d file(s) not up to date with %s: run `gpufleet render`\n", len(changes), o.fleetFile)
		return silentFailure{code: ExitFailed}
	}
	return nil
}

// loadFleet loads the fleet file; invalid input is printed one problem per
// line (file:line:col: key: message) and fails with ExitFailed, an
// unreadable file with ExitUnknown.
func loadFleet(path string) (*fleet.Fleet, error) {
	f, err := fleet.Load(path)
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

func printChanges(w io.Writer, format string, changes []render.Change, check bool) error {
	if format == "json" {
		if changes == nil {
			changes = []render.Change{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"upToDate": len(changes) == 0, "changes": changes})
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "up to date")
		return nil
	}
	verb := map[string]string{render.ActionAdd: "add", render.ActionChange: "change", render.ActionRemove: "remove"}
	if !check {
		verb = map[string]string{render.ActionAdd: "added", render.ActionChange: "changed", render.ActionRemove: "removed"}
	}
	for _, c := range changes {
		fmt.Fprintf(w, "%-8s %s\n", verb[c.Action], c.Path)
	}
	return nil
}

// renderOptionsFor gives render the operator charts when the fleet renders
// them to manifests: from source, or else the fleet's [charts] repository.
func renderOptionsFor(ctx context.Context, f *fleet.Fleet, source string) (render.Options, error) {
	if f.Charts.Mode != fleet.ModeManifests {
		return render.Options{}, nil
	}
	src, err := chartSource(source, "", "", f.Charts.Repository)
	if err != nil {
		return render.Options{}, withCode(ExitUnknown, err)
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
