package adopt

import (
	"testing"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/lint"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// TestWrittenFleetsRenderAndLint: every golden fleet file parses, renders
// (the manifests mode with the real charts of ../shared/operators) and
// lints clean: what init writes is a fleet file the other commands take
// as it is.
func TestWrittenFleetsRenderAndLint(t *testing.T) {
	for name, g := range goldenFleets() {
		t.Run(name, func(t *testing.T) {
			r := Judge(recorded(g.clusters), g.opts)
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			f, err := fleet.Parse(name+".toml", Write(r.Fleet))
			if err != nil {
				t.Fatal(err)
			}
			var opts render.Options
			if f.Charts.Mode == fleet.ModeManifests {
				opts.Charts = charts.Renderer{Ctx: t.Context(), Src: &charts.FolderSource{Dir: sharedtest.Operators(t)}}
			}
			out, err := render.RenderWith(f, opts)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			dir := t.TempDir()
			if _, err := render.Write(out, dir); err != nil {
				t.Fatal(err)
			}
			rep, err := lint.Run(dir, lint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, finding := range rep.Findings {
				t.Errorf("lint: %s", finding)
			}
		})
	}
}
