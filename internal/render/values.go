package render

import (
	"slices"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// MergeValues is a chart's values as Helm makes them of two values files
// given in order (helm upgrade -f base -f over): over merged into base,
// maps merged key by key at every depth, anything else in over replacing
// what base has at its key (a list is replaced whole, as Helm does). The
// result shares nothing with base or over that a caller could change.
//
// render hands a chart the cluster's own values (the release's, as
// gpufleet init found them) with gpufleet's merged over them, so gpufleet's
// keys win. The fleet file refuses the keys gpufleet owns in a cluster's
// values (fleet.GPUOperatorOwnedValues), so none is ever overridden
// unannounced; the order only matters for what no check could foresee.
func MergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = deepCopyValue(v)
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(bm, vm)
				continue
			}
		}
		out[k] = deepCopyValue(v)
	}
	return out
}

// deepCopyValue copies the maps and lists of a values tree.
func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return v
}

// gpuChartValues are the GPU Operator chart values of p's cluster at rel,
// with its driver moving or not: the cluster's own values with gpufleet's
// merged over them. What render writes and what validate checks both come
// from here.
func gpuChartValues(p clusterPlan, rel *fleet.Release, moving bool) map[string]any {
	return MergeValues(p.cluster.GPUOperatorValues(), gpuOperatorValues(rel, clusterGPUValues(p, moving)))
}

// networkChartValues are the Network Operator chart values of cluster c at
// rel: its own values with gpufleet's merged over them.
func networkChartValues(c *fleet.Cluster, rel *fleet.Release) map[string]any {
	return MergeValues(c.NetworkOperatorValues(), NetworkOperatorValues(rel))
}

// ValueSet is one set of chart values and the clusters that install the
// chart with them.
type ValueSet struct {
	Values map[string]any
	// Clusters are the clusters whose values these are, sorted; none for
	// gpufleet's values alone when no cluster has them.
	Clusters []string
}

// NetworkOperatorValueSets are the distinct Network Operator chart values
// the clusters of f would install rel with, NetworkOperatorValues first,
// then those of clusters with values of their own in name order: what
// `gpufleet validate` renders the chart with, at every release's version.
func NetworkOperatorValueSets(f *fleet.Fleet, rel *fleet.Release) []ValueSet {
	sets := valueSets{}
	sets.add(NetworkOperatorValues(rel), "")
	for _, name := range f.ClusterNames() {
		sets.add(networkChartValues(f.Clusters[name], rel), name)
	}
	return sets.list
}

// valueSets collects distinct values, in the order first added, with the
// clusters of each.
type valueSets struct {
	list []ValueSet
	seen map[string]int
}

// add adds v, the values of cluster (none: gpufleet's alone).
func (s *valueSets) add(v map[string]any, cluster string) {
	b, err := jsonMarshal(v)
	if err != nil {
		// Values read from YAML as Helm reads them are JSON's types:
		// nothing to check that the chart could take.
		return
	}
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	i, ok := s.seen[string(b)]
	if !ok {
		i = len(s.list)
		s.seen[string(b)] = i
		s.list = append(s.list, ValueSet{Values: v})
	}
	if cluster != "" && !slices.Contains(s.list[i].Clusters, cluster) {
		s.list[i].Clusters = append(s.list[i].Clusters, cluster)
	}
}
