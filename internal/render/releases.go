package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// ReleaseFile is one file render writes for a cluster whose operators run
// Release: the release whose CRDs its objects must fit.
type ReleaseFile struct {
	Release string
	// Path is the file's path in the output; As says in which promotion
	// state render writes it so, e.g. "r2026-10 rolling out from r2026-06"
	// (empty when every cluster runs Release as the stable release).
	Path, As string
	Data     []byte
}

// Origin names the file for messages: its path and, when it matters, the
// promotion state it was rendered in.
func (r ReleaseFile) Origin() string {
	if r.As == "" {
		return r.Path
	}
	return r.Path + " (as " + r.As + ")"
}

// EveryRelease renders f as if each cluster ran each release, whatever
// [promotion] says now: a release no cluster runs yet (the next one, a
// drill) is checked before `start` sends it anywhere. For each release it
// renders every cluster on it as the stable release, and on it while it
// rolls out from each other release (its operators, with both drivers'
// NVIDIADrivers: also what an abort of the other release renders). Each
// distinct file is returned once per release, sorted.
func EveryRelease(f *fleet.Fleet, opts Options) ([]ReleaseFile, error) {
	if f.Charts.Mode == fleet.ModeManifests && opts.Charts != nil {
		// One cache for all the renders: they share chart versions.
		opts.Charts = &chartCache{next: opts.Charts, done: map[string][]byte{}}
	}
	type variant struct {
		as string
		p  fleet.Promotion
	}
	var variants []variant
	names := f.ReleaseNames()
	for _, r := range names {
		variants = append(variants, variant{p: fleet.Promotion{Stable: r}})
		if len(f.Waves) == 0 {
			continue
		}
		last := f.Waves[len(f.Waves)-1].Name
		for _, from := range names {
			if from != r {
				variants = append(variants, variant{as: r + " rolling out from " + from, p: fleet.Promotion{Stable: from, Rollout: &fleet.Rollout{Release: r, Wave: last, Stage: fleet.StageAll}}})
			}
		}
	}
	var out []ReleaseFile
	for _, v := range variants {
		g := f.WithPromotion(v.p)
		rendered, err := RenderWith(g, opts)
		if err != nil {
			return nil, fmt.Errorf("render as %s: %w", cmp.Or(v.as, "every cluster on "+v.p.Stable), err)
		}
		for _, name := range f.ClusterNames() {
			rel := g.ReleaseFor(name)
			dir := ClusterDir(name) + "/"
			for _, p := range rendered.Paths() {
				if strings.HasPrefix(p, dir) {
					out = append(out, ReleaseFile{Release: rel.Name, Path: p, As: v.as, Data: rendered.Files[p]})
				}
			}
		}
	}
	// The same bytes for the same release are one file, named by the
	// first state that rendered them (the plain one comes first).
	var kept []ReleaseFile
	seen := map[string]bool{}
	for _, rf := range out {
		key := rf.Release + "\x00" + rf.Path + "\x00" + string(rf.Data)
		if !seen[key] {
			seen[key] = true
			kept = append(kept, rf)
		}
	}
	slices.SortStableFunc(kept, func(a, b ReleaseFile) int {
		return cmp.Or(strings.Compare(a.Release, b.Release), strings.Compare(a.Path, b.Path))
	})
	return kept, nil
}
