package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestMergeValues: the rule by which a cluster's own values and gpufleet's
// make the chart's, as Helm merges two values files given in order: maps
// merged at every depth, anything else from the later one replacing the
// earlier's (a list whole, a map by a scalar and the other way round), and
// neither input changed or shared.
func TestMergeValues(t *testing.T) {
	tests := []struct {
		name             string
		base, over, want map[string]any
	}{
		{name: "nothing", want: map[string]any{}},
		{
			name: "only the cluster's",
			base: map[string]any{"toolkit": map[string]any{"enabled": false}},
			want: map[string]any{"toolkit": map[string]any{"enabled": false}},
		},
		{
			name: "maps merged at every depth",
			base: map[string]any{"driver": map[string]any{"repository": "registry.example.com/nvidia", "rdma": map[string]any{"enabled": true}}},
			over: map[string]any{"driver": map[string]any{"enabled": true, "rdma": map[string]any{"useHostMofed": false}}},
			want: map[string]any{"driver": map[string]any{"repository": "registry.example.com/nvidia", "enabled": true, "rdma": map[string]any{"enabled": true, "useHostMofed": false}}},
		},
		{
			name: "a scalar of the later wins",
			base: map[string]any{"driver": map[string]any{"enabled": false}},
			over: map[string]any{"driver": map[string]any{"enabled": true}},
			want: map[string]any{"driver": map[string]any{"enabled": true}},
		},
		{
			name: "a list is replaced whole",
			base: map[string]any{"daemonsets": map[string]any{"tolerations": []any{"a", "b"}}},
			over: map[string]any{"daemonsets": map[string]any{"tolerations": []any{"c"}}},
			want: map[string]any{"daemonsets": map[string]any{"tolerations": []any{"c"}}},
		},
		{
			name: "a map replaces a scalar or null, and a scalar a map",
			base: map[string]any{"mig": "single", "driver": nil, "nfd": map[string]any{"enabled": true}},
			over: map[string]any{"mig": map[string]any{"strategy": "mixed"}, "driver": map[string]any{"enabled": true}, "nfd": false},
			want: map[string]any{"mig": map[string]any{"strategy": "mixed"}, "driver": map[string]any{"enabled": true}, "nfd": false},
		},
		{
			name: "a null of the later is kept (Helm then drops the chart's default)",
			base: map[string]any{"driver": map[string]any{"repository": "x"}},
			over: map[string]any{"driver": map[string]any{"repository": nil}},
			want: map[string]any{"driver": map[string]any{"repository": nil}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deepCopyValue(tt.base)
			got := MergeValues(tt.base, tt.over)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MergeValues (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, deepCopyValue(tt.base)); diff != "" {
				t.Errorf("the cluster's values changed (-before +after):\n%s", diff)
			}
			// The result shares nothing: changing it changes neither input.
			mutate(got)
			if diff := cmp.Diff(before, deepCopyValue(tt.base)); diff != "" {
				t.Errorf("the result shares the cluster's values (-before +after):\n%s", diff)
			}
		})
	}
}

// mutate changes every map and list of a values tree.
func mutate(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			mutate(e)
			if _, ok := e.(map[string]any); !ok {
				v[k] = "changed"
			}
		}
	case []any:
		for i := range v {
			v[i] = "changed"
		}
	}
}

// TestOwnedValuesAreWhatRenderWrites holds the fleet file's list of the
// chart values gpufleet owns (which the parser refuses in a cluster's
// values and init drops) to what render writes, both ways: every value
// render writes, in every case (MIG or not, either driver management,
// precompiled, either actuator, at rest and moving), lies under an owned
// key, and every owned key is written in some case.
func TestOwnedValuesAreWhatRenderWrites(t *testing.T) {
	operatorPolicy := &fleet.Policy{Actuator: v1alpha1.ActuatorGPUOperator, ParallelNodes: 2, MaxUnavailable: fleet.Amount{Value: 25, Percent: true}, DrainTimeout: time.Hour}
	var written []string
	for _, rel := range []*fleet.Release{{Driver: "580.95.05"}, {Driver: "570", Precompiled: true}} {
		for _, in := range []gpuValues{
			{}, {mig: true}, {clusterPolicy: true, policy: operatorPolicy}, {clusterPolicy: true, policy: operatorPolicy, moving: true, mig: true},
			{policy: operatorPolicy}, {policy: operatorPolicy, moving: true},
		} {
			written = append(written, leafPaths(gpuOperatorValues(rel, in), "")...)
		}
	}
	checkOwned(t, "GPU Operator", written, fleet.GPUOperatorOwnedValues)
	checkOwned(t, "Network Operator", leafPaths(NetworkOperatorValues(&fleet.Release{}), ""), fleet.NetworkOperatorOwnedValues)
}

func checkOwned(t *testing.T, chart string, written []string, owned []fleet.OwnedValue) {
	t.Helper()
	under := func(path string, o fleet.OwnedValue) bool {
		return path == o.Path || strings.HasPrefix(path, o.Path+".")
	}
	for _, p := range written {
		if !slices.ContainsFunc(owned, func(o fleet.OwnedValue) bool { return under(p, o) }) {
			t.Errorf("%s: render writes %s, which no owned value covers: a cluster's values could set it and lose it unannounced", chart, p)
		}
	}
	for _, o := range owned {
		if !slices.ContainsFunc(written, func(p string) bool { return under(p, o) }) {
			t.Errorf("%s: %s is owned, yet render never writes it: the parser refuses a value nothing overrides", chart, o.Path)
		}
	}
}

// leafPaths are the dotted paths of the values that are not maps.
func leafPaths(v map[string]any, prefix string) []string {
	var out []string
	for k, e := range v {
		p := prefix + k
		if m, ok := e.(map[string]any); ok && len(m) > 0 {
			out = append(out, leafPaths(m, p+".")...)
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestAdoptedValuesValueSets: validate checks each cluster's own values
// merged under gpufleet's, for both operators, and names the clusters of
// each set.
func TestAdoptedValuesValueSets(t *testing.T) {
	f := adoptedFleetAs(t, fleet.ModeHelmRelease)
	r1 := f.Releases["r1"]
	gpu := GPUOperatorValueSets(f, r1)
	var withMirror []string
	for _, s := range gpu {
		if dig(s.Values, "driver", "repository") == "registry.example.com/nvidia" {
			withMirror = append(withMirror, s.Clusters...)
			if dig(s.Values, "driver", "nvidiaDriverCRD", "enabled") != false || dig(s.Values, "driver", "version") != r1.Driver || dig(s.Values, "toolkit", "enabled") != false {
				t.Errorf("cp's set lacks gpufleet's or its own values: %v", s.Values)
			}
		}
	}
	if !slices.Equal(slices.Compact(withMirror), []string{"cp"}) {
		t.Errorf("the sets with cp's mirror name clusters %v, want cp", withMirror)
	}
	// nd has no GPU Operator values of its own: gpufleet's alone, the
	// first set, are its.
	if diff := cmp.Diff(ValueSet{Values: GPUOperatorValues(r1), Clusters: []string{"nd"}}, gpu[0]); diff != "" {
		t.Errorf("the first set must be gpufleet's values alone (-want +got):\n%s", diff)
	}
	net := NetworkOperatorValueSets(f, r1)
	want := []ValueSet{
		{Values: map[string]any{"nfd": map[string]any{"enabled": false}}, Clusters: []string{"cp"}},
		{Values: map[string]any{"nfd": map[string]any{"enabled": false, "deployNodeFeatureRules": false}, "sriovNetworkOperator": map[string]any{"enabled": true}}, Clusters: []string{"nd"}},
	}
	if diff := cmp.Diff(want, net); diff != "" {
		t.Errorf("Network Operator value sets (-want +got):\n%s", diff)
	}
}
