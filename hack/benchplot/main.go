// Command benchplot draws the scaling plot of docs/performance.md: the
// time of each fleet-scale benchmark against the fleet's size, from the
// output of `go test -bench` (`make bench` runs it).
//
// Every benchmark whose name has a part clusters=N or nodes=N is a point
// of the series named by the rest of its name (BenchmarkRenderWrite/empty/
// clusters=500 is a point of "RenderWrite/empty"); clusters and nodes get
// a panel each, on log-log axes, with a dotted line of linear growth from
// each series' smallest size.
//
//	benchplot [-o docs/scaling.svg] [-title T] [bench.txt ...]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	out := flag.String("o", "docs/scaling.svg", "the SVG file to write")
	title := flag.String("title", "", "a line under the plot (e.g. the machine and its load)")
	flag.Parse()
	var inputs []io.Reader
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	var points []point
	for _, in := range inputs {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if p, ok := parseLine(sc.Text()); ok {
				points = append(points, p)
			}
		}
		if err := sc.Err(); err != nil {
			fail(err)
		}
	}
	if len(points) == 0 {
		fail(fmt.Errorf("no benchmark with clusters=N or nodes=N in the input"))
	}
	svg := plot(group(points), *title)
	if err := os.WriteFile(*out, []byte(svg), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "benchplot: %d points, wrote %s\n", len(points), *out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchplot:", err)
	os.Exit(1)
}
