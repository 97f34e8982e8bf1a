package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// phaseColors are the SVG colours of node phases; Pending is not drawn.
var phaseColors = []struct {
	phase v1alpha1.NodePhase
	color string
}{
	{v1alpha1.NodeDraining, "#f5a623"},
	{v1alpha1.NodeInstalling, "#4a90e2"},
	{v1alpha1.NodeValidating, "#9b59b6"},
	{v1alpha1.NodeSoaking, "#50c8c6"},
	{v1alpha1.NodeDone, "#2e8b57"},
	{v1alpha1.NodeRollingBack, "#e67e22"},
	{v1alpha1.NodeRolledBack, "#c0392b"},
	{v1alpha1.NodeQuarantined, "#2c2c2c"},
}

func colorOf(p v1alpha1.NodePhase) string {
	for _, c := range phaseColors {
		if c.phase == p {
			return c.color
		}
	}
	return "#cccccc"
}

// WriteSVG draws a run's timeline: one row per node, coloured by phase, with
// the periods when nodes may start (open) shaded. The run must have been
// recorded (Config.Record).
func WriteSVG(out io.Writer, title string, res *Result, open []Interval) error {
	w := bufio.NewWriter(out)
	names := make([]string, 0, len(res.Nodes))
	row := make(map[string]int, len(res.Nodes))
	for _, n := range res.Nodes {
		row[n.Name] = len(names)
		names = append(names, n.Name)
	}
	rowH := 14.0
	if len(names) > 60 {
		rowH = max(600/float64(len(names)), 1)
	}
	const left, top, plotW = 120.0, 40.0, 1000.0
	plotH := rowH * float64(len(names))
	height := top + plotH + 70
	start, end := res.Start, res.End
	if !end.After(start) {
		end = start.Add(time.Hour)
	}
	span := end.Sub(start)
	x := func(t time.Time) float64 { return left + plotW*float64(t.Sub(start))/float64(span) }

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", left+plotW+20, height)
	fmt.Fprintf(w, `<text x="%.0f" y="20" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	for _, iv := range open {
		fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.1f" fill="#e8f5e9"/>`+"\n", x(iv.From), top, x(iv.To)-x(iv.From), plotH)
	}
	step := tickStep(span)
	for t := start.Truncate(step).Add(step); t.Before(end); t = t.Add(step) {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x(t), top, x(t), top+plotH)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), top+plotH+14, t.UTC().Format(tickFormat(step)))
	}
	for _, s := range res.Timeline {
		y := top + rowH*float64(row[s.Node])
		fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s %s %s–%s</title></rect>`+"\n",
			x(s.From), y, max(x(s.To)-x(s.From), 0.5), max(rowH-1, 0.8), colorOf(s.Phase),
			html.EscapeString(s.Node), s.Phase, s.From.UTC().Format("Mon 15:04"), s.To.UTC().Format("Mon 15:04"))
	}
	if rowH >= 10 {
		for i, n := range names {
			fmt.Fprintf(w, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, top+rowH*float64(i)+rowH-3, html.EscapeString(n))
		}
	}
	lx := left
	ly := top + plotH + 40
	fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="#e8f5e9" stroke="#aaa"/><text x="%.0f" y="%.0f">may start</text>`+"\n", lx, ly, lx+14, ly+9)
	lx += 80
	for _, c := range phaseColors {
		fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n", lx, ly, c.color, lx+14, ly+9, c.phase)
		lx += 95
	}
	fmt.Fprintln(w, "</svg>")
	return w.Flush()
}

// tickStep picks a time axis step giving at most about a dozen ticks.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour} {
		if span/s <= 12 {
			return s
		}
	}
	return 14 * 24 * time.Hour
}

// tickFormat shows seconds on an axis whose ticks are under a minute apart.
func tickFormat(step time.Duration) string {
	if step < time.Minute {
		return "15:04:05"
	}
	return "Mon 15:04"
}
