package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

const (
	panelW, panelH = 480, 300 // the plot area of one panel
	marginL        = 70
	marginT        = 40
	gap            = 90
	legendLine     = 16
)

// plot draws one panel per kind of size, clusters first.
func plot(all []*series, title string) string {
	var panels [][]*series
	for _, kind := range []string{"clusters", "nodes"} {
		var ss []*series
		for _, s := range all {
			if s.panel == kind {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			panels = append(panels, ss)
		}
	}
	legendRows := 0
	for _, ss := range panels {
		legendRows = max(legendRows, len(ss))
	}
	width := marginL + len(panels)*(panelW+gap)
	height := marginT + panelH + 50 + legendRows*legendLine + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	for i, ss := range panels {
		drawPanel(&b, ss, marginL+i*(panelW+gap), marginT)
	}
	if title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", marginL, height-10, html.EscapeString(title))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, ss []*series, x0, y0 int) {
	kind := ss[0].panel
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			minX, maxX = math.Min(minX, p.size), math.Max(maxX, p.size)
			minY, maxY = math.Min(minY, p.sec), math.Max(maxY, p.sec)
		}
		// The linear reference reaches up to first × growth.
		if len(s.points) > 1 {
			f, l := s.points[0], s.points[len(s.points)-1]
			maxY = math.Max(maxY, f.sec*l.size/f.size)
		}
	}
	lx0, lx1 := math.Log10(minX/1.25), math.Log10(maxX*1.25)
	ly0, ly1 := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if ly1-ly0 < 1 {
		ly1 = ly0 + 1
	}
	px := func(v float64) float64 { return float64(x0) + (math.Log10(v)-lx0)/(lx1-lx0)*panelW }
	py := func(v float64) float64 { return float64(y0+panelH) - (math.Log10(v)-ly0)/(ly1-ly0)*panelH }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">time per run against %s (log-log)</text>`+"\n", x0, y0-14, kind)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, panelW, panelH)
	for e := ly0; e <= ly1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", x0, y, x0+panelW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0-6, y, seconds(math.Pow(10, e)))
	}
	var sizes []float64
	for _, s := range ss {
		for _, p := range s.points {
			if !containsFloat(sizes, p.size) {
				sizes = append(sizes, p.size)
			}
		}
	}
	for _, v := range sizes {
		x := px(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, y0, x, y0+panelH)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, y0+panelH+16, count(v))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", x0+panelW/2, y0+panelH+34, kind)

	for i, s := range ss {
		color := palette[i%len(palette)]
		if len(s.points) > 1 {
			f, l := s.points[0], s.points[len(s.points)-1]
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2,3" opacity="0.6"/>`+"\n",
				px(f.size), py(f.sec), px(l.size), py(f.sec*l.size/f.size), color)
		}
		var pts []string
		for _, p := range s.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.size), py(p.sec)))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		for _, p := range s.points {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s at %s %s: %s</title></circle>`+"\n",
				px(p.size), py(p.sec), color, html.EscapeString(s.name), count(p.size), kind, seconds(p.sec))
		}
		// Legend: the series, its largest figure and how it grew against
		// its size (1.0 is linear).
		ly := y0 + panelH + 56 + i*legendLine
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x0, ly-4, x0+18, ly-4, color)
		text := s.name
		if s.cpu {
			text += " (CPU)"
		} else {
			text += " (wall)"
		}
		if l := s.points[len(s.points)-1]; true {
			text += fmt.Sprintf(": %s at %s", seconds(l.sec), count(l.size))
			if len(s.points) > 1 {
				f := s.points[0]
				text += fmt.Sprintf(", %.2f× linear from %s", (l.sec/f.sec)/(l.size/f.size), count(f.size))
			}
		}
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x0+24, ly, html.EscapeString(text))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#777" font-size="11" text-anchor="end">dotted: linear from the smallest size</text>`+"\n", x0+panelW, y0-2)
}

func containsFloat(list []float64, v float64) bool {
	return slices.Contains(list, v)
}

// seconds writes a time as 12 ms, 1.5 s, 2 min.
func seconds(s float64) string {
	switch {
	case s < 1:
		return trim(fmt.Sprintf("%.3g", s*1000)) + " ms"
	case s < 120:
		return trim(fmt.Sprintf("%.3g", s)) + " s"
	}
	return trim(fmt.Sprintf("%.3g", s/60)) + " min"
}

// count writes 5000 as 5,000.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func trim(s string) string {
	if strings.Contains(s, ".") && !strings.Contains(s, "e") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
