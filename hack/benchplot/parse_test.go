package main

import (
	"strings"
	"testing"
)

func TestParseAndGroup(t *testing.T) {
	out := `goos: linux
BenchmarkLoad/clusters=500-2         	       5	  34747687 ns/op	   6.72 MB/s	0.0301 cpu-s/op	13939540 B/op
BenchmarkLoad/clusters=5000-2        	       5	 346747370 ns/op	   6.56 MB/s	0.33 cpu-s/op	141142731 B/op
BenchmarkRenderWrite/empty/clusters=500-2  	       1	6380101994 ns/op	196952824 B/op
BenchmarkSimulateNodes/parallel=100/nodes=5000-2   	       1	 980717168 ns/op	        38.93 sim-hours
BenchmarkPlan10000Nodes-2   	       1	   1051439 ns/op
PASS`
	var points []point
	for line := range strings.SplitSeq(out, "\n") {
		if p, ok := parseLine(line); ok {
			points = append(points, p)
		}
	}
	if len(points) != 4 {
		t.Fatalf("%d points, want 4 (the benchmark without a size is no point): %+v", len(points), points)
	}
	ss := group(points)
	if len(ss) != 3 {
		t.Fatalf("%d series, want 3", len(ss))
	}
	load := ss[0]
	if load.name != "Load" || load.panel != "clusters" || !load.cpu || len(load.points) != 2 || load.points[1].sec != 0.33 {
		t.Errorf("Load: %+v", load)
	}
	if w := ss[1]; w.name != "RenderWrite/empty" || w.cpu || w.points[0].sec != 6.380101994 {
		t.Errorf("RenderWrite/empty: %+v", w)
	}
	if s := ss[2]; s.name != "SimulateNodes/parallel=100" || s.panel != "nodes" || s.points[0].size != 5000 {
		t.Errorf("SimulateNodes: %+v", s)
	}
	svg := plot(ss, "title")
	for _, want := range []string{"<svg", "against clusters", "against nodes", "Load (CPU)", "RenderWrite/empty (wall)", "title"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the plot has no %q", want)
		}
	}
}
