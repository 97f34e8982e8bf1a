package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// peerTable collects the runs of every cell.
type peerTable struct {
	mu    sync.Mutex
	cells map[string][]peerRun
}

func (t *peerTable) add(key string, r peerRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cells[key] = append(t.cells[key], r)
}

// spread writes min/median/max.
func spread(vs []float64, format string) string {
	if len(vs) == 0 {
		return "–"
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	f := func(v float64) string { return fmt.Sprintf(format, v) }
	return f(s[0]) + " / " + f(s[len(s)/2]) + " / " + f(s[len(s)-1])
}

func (t *peerTable) markdown(sizes []int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, n := range sizes {
		fmt.Fprintf(&b, "%d nodes (two cordoned by hand), parallel %d, maxUnavailable %d; min / median / max of each cell's runs\n\n", n, peerParallel, peerMaxUnavailable)
		fmt.Fprintf(&b, "| | operator alone | gpufleet actuator | operator gated by gpufleet |\n|---|---|---|---|\n")
		row := func(name string, cell func([]peerRun) string) {
			fmt.Fprintf(&b, "| %s", name)
			for _, way := range peerWays {
				fmt.Fprintf(&b, " | %s", cell(t.cells[fmt.Sprintf("nodes=%d/way=%s", n, way)]))
			}
			b.WriteString(" |\n")
		}
		pick := func(f func(peerRun) float64) func([]peerRun) []float64 {
			return func(rs []peerRun) []float64 {
				var out []float64
				for _, r := range rs {
					out = append(out, f(r))
				}
				return out
			}
		}
		row("runs", func(rs []peerRun) string { return strconv.Itoa(len(rs)) })
		row("makespan, good release (s)", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.makespan.Seconds() })(rs), "%.0f")
		})
		row("gpufleet-controller reads per node", func(rs []peerRun) string { return spread(pick(func(r peerRun) float64 { return r.reads })(rs), "%.1f") })
		row("gpufleet-controller writes per node", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.writes })(rs), "%.1f")
		})
		row("gpu-operator reads per node (API server's audit log)", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.operatorReads })(rs), "%.1f")
		})
		row("gpu-operator writes per node (audit log)", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.operatorWrites })(rs), "%.1f")
		})
		row("the upgrading component's writes per node (audit log: operator / gpufleet-controller / both)", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.upgrader })(rs), "%.1f")
		})
		row("… of them to nodes and pods (evictions included)", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.upgraderNodePods })(rs), "%.1f")
		})
		row("node and pod writes per node, every component", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.cluster })(rs), "%.1f")
		})
		row(fmt.Sprintf("peak unavailable (limit %d)", peerMaxUnavailable), func(rs []peerRun) string { return spread(pick(func(r peerRun) float64 { return r.peak })(rs), "%.0f") })
		row("a hand-cordoned node uncordoned", func(rs []peerRun) string {
			n := 0
			for _, r := range rs {
				if r.uncordoned {
					n++
				}
			}
			return fmt.Sprintf("%d of %d runs", n, len(rs))
		})
		row("nodes the bad version reached", func(rs []peerRun) string {
			return spread(pick(func(r peerRun) float64 { return r.badReached })(rs), "%.0f")
		})
		row("an XID right after the upgrade", func(rs []peerRun) string {
			seen := map[string]int{}
			var order []string
			for _, r := range rs {
				if seen[r.xid] == 0 {
					order = append(order, r.xid)
				}
				seen[r.xid]++
			}
			var parts []string
			for _, o := range order {
				parts = append(parts, fmt.Sprintf("%s (%d)", o, seen[o]))
			}
			return strings.Join(parts, "; ")
		})
		b.WriteString("\n")
	}
	return b.String()
}
