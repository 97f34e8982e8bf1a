package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// point is one benchmark result: the time of one run at one size.
type point struct {
	panel  string // "clusters" or "nodes"
	series string
	size   float64
	sec    float64 // wall time per run
	cpu    float64 // CPU seconds per run (cpu-s/op), 0 when not reported
}

// benchLine is a result line: name-GOMAXPROCS, iterations, ns/op, ...
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// cpuMetric is the CPU time the fleet-scale benchmarks report beside it.
var cpuMetric = regexp.MustCompile(`\s([0-9.]+(?:e[-+]?[0-9]+)?) cpu-s/op`)

// parseLine reads one line of `go test -bench` output; false when it is
// not the result of a benchmark with a size.
func parseLine(line string) (point, bool) {
	m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return point{}, false
	}
	ns, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return point{}, false
	}
	var rest []string
	p := point{sec: ns / 1e9}
	if c := cpuMetric.FindStringSubmatch(line); c != nil {
		p.cpu, _ = strconv.ParseFloat(c[1], 64)
	}
	for part := range strings.SplitSeq(m[1], "/") {
		k, v, ok := strings.Cut(part, "=")
		if ok && (k == "clusters" || k == "nodes") {
			if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
				p.panel, p.size = k, n
				continue
			}
		}
		rest = append(rest, part)
	}
	if p.panel == "" {
		return point{}, false
	}
	p.series = strings.Join(rest, "/")
	return p, true
}

// series is one line of the plot.
type series struct {
	panel, name string
	points      []point // by size
	// cpu: the points are CPU seconds, not wall time.
	cpu bool
}

// group gathers points into series, in the order they first appear; a
// size measured twice keeps its last figure.
func group(points []point) []*series {
	var out []*series
	byName := map[string]*series{}
	for _, p := range points {
		key := p.panel + "\x00" + p.series
		s := byName[key]
		if s == nil {
			s = &series{panel: p.panel, name: p.series}
			byName[key] = s
			out = append(out, s)
		}
		if i := slices.IndexFunc(s.points, func(q point) bool { return q.size == p.size }); i >= 0 {
			s.points[i] = p
		} else {
			s.points = append(s.points, p)
		}
	}
	for _, s := range out {
		// CPU time where every point has it: on a shared machine the wall
		// time grows with everything else running.
		s.cpu = !slices.ContainsFunc(s.points, func(p point) bool { return p.cpu <= 0 })
		if s.cpu {
			for i := range s.points {
				s.points[i].sec = s.points[i].cpu
			}
		}
		slices.SortFunc(s.points, func(a, b point) int {
			switch {
			case a.size < b.size:
				return -1
			case a.size > b.size:
				return 1
			}
			return 0
		})
	}
	return out
}
