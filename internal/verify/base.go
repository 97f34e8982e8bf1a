package verify

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// baseFleet is the base's fleet file, read from git, with what render
// needs to render it as the base does: in the manifests chart mode, the
// chart folder it names in the repository, read from the base as well (a
// change may edit a chart under its version: the base renders the chart it
// had).
type baseFleet struct {
	f *fleet.Fleet
	// opts render f; scratch holds the base's chart folder, if any.
	opts    render.Options
	scratch string
}

func (b *baseFleet) cleanup() {
	if b.scratch != "" {
		_ = os.RemoveAll(b.scratch)
	}
}

// loadBase reads the base's fleet file. It returns nil, and why, when it
// cannot: the promotion and clusters checks then cannot be made. It parses
// the file as if it stood where the work tree's does, so that what it
// names relative to itself compares with the head's.
func (v *run) loadBase(base string) (*baseFleet, string) {
	data, ok, err := v.r.show(base, v.fleetPath)
	switch {
	case err != nil:
		return nil, "could not read the base's fleet file: " + err.Error()
	case !ok:
		return nil, fmt.Sprintf("%s does not exist at the base %s: there is no promotion state to compare with", v.fleetPath, short(base))
	}
	f, err := fleet.Parse(v.o.FleetFile, data)
	if err != nil {
		return nil, fmt.Sprintf("the base's %s does not load: %v", v.fleetPath, oneLine(err))
	}
	b := &baseFleet{f: f}
	forCharts := f
	if dir, ok := v.chartFolder(f); ok {
		b.scratch, err = os.MkdirTemp("", "gpufleet-verify-base-")
		if err == nil {
			err = v.r.extract(base, filepath.ToSlash(dir), b.scratch)
		}
		if err == nil {
			g := *f
			g.Charts.Repository = filepath.Join(b.scratch, dir)
			forCharts = &g
		}
		// A folder the base does not hold (left out of git) is read
		// where it is, as the head reads it.
	}
	if b.opts, err = v.renderOptions(forCharts); err != nil {
		b.opts = render.Options{Charts: failingCharts{err}}
	}
	return b, ""
}

// chartFolder is the folder of charts f renders from, relative to the
// repository's root, when f renders the charts itself from a folder that
// the repository holds.
func (v *run) chartFolder(f *fleet.Fleet) (string, bool) {
	if f.Charts.Mode != fleet.ModeManifests {
		return "", false
	}
	abs, err := filepath.Abs(f.Charts.Repository)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(v.r.top, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// failingCharts renders no chart, with the reason the charts could not be
// found: the render that needs them fails with it.
type failingCharts struct{ err error }

func (c failingCharts) RenderChart(_, _, _, _ string, _ map[string]any) ([]byte, error) {
	return nil, c.err
}
