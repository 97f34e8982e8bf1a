package promote

import (
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Removal is an operator a promotion step takes off clusters that run it
// now: the release they move to runs none, so render stops writing it and
// Flux (or Argo CD) uninstalls it there. A removal is never silent: plan,
// the command and its commit message each say it.
type Removal struct {
	// Operator is the operator's chart, e.g. "network-operator".
	Operator string `json:"operator"`
	// Version is the chart version the clusters run now.
	Version string `json:"version"`
	// Clusters lose it, in wave order.
	Clusters []string `json:"clusters"`
	// Release is the release they move to.
	Release string `json:"release"`
	// Message says it in one sentence, e.g. `network-operator v25.10.0 is
	// removed from clusters prod-a, prod-b (release r2 says
	// network-operator = "none")`.
	Message string `json:"message"`
}

// Removals are the operators the step from f to next takes off clusters:
// each cluster's operators as render installs them (render.Operators)
// before and after, one Removal per operator, version and release moved
// to. A step that moves no cluster to another release removes nothing.
func Removals(f, next *fleet.Fleet) []Removal {
	var out []Removal
	index := map[string]int{}
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			before, after := f.ReleaseFor(c), next.ReleaseFor(c)
			if before == nil || after == nil || before.Name == after.Name {
				continue
			}
			kept := map[string]bool{}
			for _, op := range render.Operators(next, c) {
				kept[op.Chart] = true
			}
			for _, op := range render.Operators(f, c) {
				if kept[op.Chart] {
					continue
				}
				key := op.Chart + "@" + op.Version + ">" + after.Name
				i, ok := index[key]
				if !ok {
					i = len(out)
					index[key] = i
					out = append(out, Removal{Operator: op.Chart, Version: op.Version, Release: after.Name})
				}
				out[i].Clusters = append(out[i].Clusters, c)
			}
		}
	}
	for i := range out {
		out[i].Message = removalMessage(out[i], next.Releases[out[i].Release])
	}
	return out
}

// removalMessage says r in one sentence, with what the release moved to
// says: network-operator = "none", or nothing at all (where no release the
// clusters ran had one, or the rollout of one is aborted).
func removalMessage(r Removal, rel *fleet.Release) string {
	clusters := "cluster "
	if len(r.Clusters) > 1 {
		clusters = "clusters "
	}
	why := fmt.Sprintf("release %s runs no %s", r.Release, r.Operator)
	if r.Operator == render.NetworkOperatorChart && rel != nil && rel.NetworkOperator == fleet.NoNetworkOperator {
		why = fmt.Sprintf("release %s says network-operator = %q", r.Release, fleet.NoNetworkOperator)
	}
	return fmt.Sprintf("%s %s is removed from %s%s (%s)", r.Operator, r.Version, clusters, strings.Join(r.Clusters, ", "), why)
}
