package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/gpufleet/gpufleet/internal/charts"
)

// progress shows how far a long operation is, on one line of a terminal
// that each step rewrites, and clears it at the end. Not on a terminal (a
// CI log, a pipe) it writes nothing: logs keep only what matters.
type progress struct {
	w     io.Writer
	tty   bool
	total int

	mu   sync.Mutex
	seen map[string]bool
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total, seen: map[string]bool{}}
}

// step shows what is being done now; a step seen before is not counted
// again.
func (p *progress) step(key, what string) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	fmt.Fprintf(p.w, "\r\x1b[K[%d/%d] %s", len(p.seen), max(p.total, len(p.seen)), what)
}

// done clears the progress line.
func (p *progress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressSource reports each chart a Source loads.
type progressSource struct {
	charts.Source
	p *progress
}

func (s progressSource) Load(ctx context.Context, name, version string) (*chart.Chart, error) {
	s.p.step(name+"@"+version, fmt.Sprintf("loading and rendering %s %s from %s", name, version, s.Source))
	return s.Source.Load(ctx, name, version)
}

// progressLister is a progressSource whose source can list versions, so
// that what needs a Lister still finds one.
type progressLister struct {
	progressSource
	charts.Lister
}

// withProgress wraps src to report its loads on p, keeping its Lister.
func withProgress(src charts.Source, p *progress) charts.Source {
	ps := progressSource{Source: src, p: p}
	if l, ok := src.(charts.Lister); ok {
		return progressLister{progressSource: ps, Lister: l}
	}
	return ps
}
