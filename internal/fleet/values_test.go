package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOperatorValues: an adopted release's own chart values, written as the
// YAML of a Helm values file in a multi-line literal string, are read as
// Helm reads a values file (JSON's types: numbers are float64, YAML 1.1's
// yes is true), for the GPU Operator's table and the Network Operator's
// inline one; a cluster without them has none.
func TestOperatorValues(t *testing.T) {
	f, err := Parse("f.toml", []byte(mustRead(t, "testdata/adopted.toml")))
	if err != nil {
		t.Fatalf("the adopted fleet must parse:\n%v", err)
	}
	want := map[string]any{
		"driver":       map[string]any{"repository": "registry.example.com/nvidia", "rdma": map[string]any{"enabled": true}},
		"toolkit":      map[string]any{"enabled": false},
		"dcgmExporter": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		"daemonsets": map[string]any{"tolerations": []any{
			map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
		}},
	}
	if diff := cmp.Diff(want, f.Clusters["stg"].GPUOperatorValues()); diff != "" {
		t.Errorf("stg's GPU Operator values (-want +got):\n%s", diff)
	}
	if v := f.Clusters["stg"].NetworkOperatorValues(); v != nil {
		t.Errorf("stg has no Network Operator table, yet values %v", v)
	}
	if v := f.Clusters["prod"].GPUOperatorValues(); v != nil {
		t.Errorf("prod's GPU Operator table has no values, yet %v", v)
	}

	src := strings.Replace(mustRead(t, "testdata/adopted.toml"),
		`network-operator = { release = "net-op", namespace = "network-operator" }`,
		"[clusters.prod.network-operator]\nrelease = \"net-op\"\nvalues = '''\n# the operator's own\nsriovNetworkOperator:\n  enabled: yes\nmaintenanceOperator:\n  replicas: 2\n'''\n", 1)
	f, err = Parse("f.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	wantNet := map[string]any{"sriovNetworkOperator": map[string]any{"enabled": true}, "maintenanceOperator": map[string]any{"replicas": float64(2)}}
	if diff := cmp.Diff(wantNet, f.Clusters["prod"].NetworkOperatorValues()); diff != "" {
		t.Errorf("prod's Network Operator values (-want +got):\n%s", diff)
	}
}

// TestOperatorValuesProblems: every problem in values is placed at its line
// in the fleet file (the YAML's line inside the literal string) and named by
// the fleet key, extended with the YAML's own keys where there is one.
func TestOperatorValuesProblems(t *testing.T) {
	base := mustRead(t, "testdata/adopted.toml")
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{
			name: "a YAML error at its line",
			edit: func(s string) string {
				return strings.Replace(s, "toolkit:\n  enabled: false\n", "toolkit:\n  enabled: false\n  bad: [1, 2\n", 1)
			},
			want: []string{
				`f.toml:24:1: clusters.stg.gpu-operator.values: not YAML: did not find expected ',' or ']' (the release's chart values, as a Helm values file has them)`,
			},
		},
		{
			name: "a tab where YAML wants spaces",
			edit: func(s string) string {
				return strings.Replace(s, "  rdma:\n", "\trdma:\n", 1)
			},
			want: []string{
				`f.toml:20:1: clusters.stg.gpu-operator.values: not YAML: found a tab character that violates indentation (the release's chart values, as a Helm values file has them)`,
			},
		},
		{
			name: "not a mapping",
			edit: func(s string) string {
				return withValues(s, "values = '''\n- driver\n- repository: registry.example.com/nvidia\n'''")
			},
			want: []string{
				`f.toml:18:1: clusters.stg.gpu-operator.values: the chart values must be a YAML mapping (key: value lines, as in a Helm values file), not a list`,
			},
		},
		{
			name: "a scalar",
			edit: func(s string) string { return withValues(s, "values = 'registry.example.com/nvidia'") },
			want: []string{
				`f.toml:17:11: clusters.stg.gpu-operator.values: the chart values must be a YAML mapping (key: value lines, as in a Helm values file), not the scalar "registry.example.com/nvidia"`,
			},
		},
		{
			name: "empty, or comments alone",
			edit: func(s string) string { return withValues(s, "values = '''\n# nothing here\n'''") },
			want: []string{
				`f.toml:17:1: clusters.stg.gpu-operator.values: values must not be empty: leave it out for the chart's defaults`,
			},
		},
		{
			name: "a document of nothing",
			edit: func(s string) string { return withValues(s, "values = '''\n---\n'''") },
			want: []string{
				`f.toml:17:1: clusters.stg.gpu-operator.values: values must not be empty: leave it out for the chart's defaults`,
			},
		},
		{
			name: "null",
			edit: func(s string) string { return withValues(s, "values = '''\nnull\n'''") },
			want: []string{
				`f.toml:17:1: clusters.stg.gpu-operator.values: values must not be empty: leave it out for the chart's defaults`,
			},
		},
		{
			name: "two documents",
			edit: func(s string) string {
				return strings.Replace(s, "toolkit:\n", "---\ntoolkit:\n", 1)
			},
			want: []string{
				`f.toml:22:1: clusters.stg.gpu-operator.values: values holds more than one YAML document: write one mapping of chart values`,
			},
		},
		{
			name: "a key written twice",
			edit: func(s string) string {
				return strings.Replace(s, "    enabled: true\ntoolkit:", "    enabled: true\n  repository: nvcr.io/nvidia\ntoolkit:", 1)
			},
			want: []string{
				`f.toml:22:3: clusters.stg.gpu-operator.values.driver.repository: written twice (first at line 19): Helm would keep the last; write it once`,
			},
		},
		{
			name: "keys gpufleet owns, each with where it lives",
			edit: func(s string) string {
				s = strings.Replace(s, "  rdma:\n", "  version: 550.54.15\n  usePrecompiled: false\n  upgradePolicy:\n    autoUpgrade: true\n  nvidiaDriverCRD:\n    enabled: false\n  enabled: true\n  rdma:\n", 1)
				return strings.Replace(s, "toolkit:\n", "mig:\n  strategy: single\ntoolkit:\n", 1)
			},
			want: []string{
				`f.toml:20:3: clusters.stg.gpu-operator.values.driver.version: driver.version is gpufleet's to set: the driver is the release's: [releases.<release>] driver; leave it out of values`,
				`f.toml:21:3: clusters.stg.gpu-operator.values.driver.usePrecompiled: driver.usePrecompiled is gpufleet's to set: precompiled drivers are the release's: [releases.<release>] precompiled; leave it out of values`,
				`f.toml:22:3: clusters.stg.gpu-operator.values.driver.upgradePolicy: driver.upgradePolicy is gpufleet's to set: the operator's upgrade policy follows the rollout policy: [policy] (actuator, parallel-nodes, max-unavailable, drain-timeout) and its overrides; leave it out of values`,
				`f.toml:24:3: clusters.stg.gpu-operator.values.driver.nvidiaDriverCRD: driver.nvidiaDriverCRD is gpufleet's to set: driver-management in [clusters.stg.gpu-operator] decides it (NVIDIADriver objects or the ClusterPolicy's DaemonSet); leave it out of values`,
				`f.toml:26:3: clusters.stg.gpu-operator.values.driver.enabled: driver.enabled is gpufleet's to set: gpufleet manages drivers the GPU Operator installs, so the operator's driver is always on; leave it out of values`,
				`f.toml:30:3: clusters.stg.gpu-operator.values.mig.strategy: mig.strategy is gpufleet's to set: render sets it from the pools: mixed when a pool of the cluster has a mig layout; leave it out of values`,
			},
		},
		{
			name: "a key gpufleet owns in the Network Operator's values, on one line",
			edit: func(s string) string {
				return strings.Replace(s, `namespace = "network-operator" }`, `namespace = "network-operator", values = "nfd: {enabled: true}" }`, 1)
			},
			want: []string{
				`f.toml:42:90: clusters.prod.network-operator.values.nfd.enabled: nfd.enabled is gpufleet's to set: gpufleet runs the GPU Operator's Node Feature Discovery and turns the Network Operator's off (two would fight over the same node labels); leave it out of values`,
			},
		},
		{
			name: "a table above an owned key written as something else",
			edit: func(s string) string {
				return strings.Replace(s, "toolkit:\n", "mig: single\ntoolkit:\n", 1)
			},
			want: []string{
				`f.toml:22:1: clusters.stg.gpu-operator.values.mig: must be a mapping: gpufleet writes mig.strategy under it (render sets it from the pools: mixed when a pool of the cluster has a mig layout)`,
			},
		},
		{
			name: "a key gpufleet owns reached through an alias",
			edit: func(s string) string {
				return strings.Replace(s, "toolkit:\n  enabled: false\n", "toolkit: &t\n  enabled: false\nmig:\n  <<: {strategy: single}\n", 1)
			},
			want: []string{
				`f.toml:24:1: clusters.stg.gpu-operator.values.mig.strategy: mig.strategy is gpufleet's to set: render sets it from the pools: mixed when a pool of the cluster has a mig layout; leave it out of values`,
			},
		},
		{
			name: "values written as a TOML table",
			edit: func(s string) string {
				return strings.Replace(s, `gpu-operator = { release = "gpu-op" }`, `gpu-operator = { release = "gpu-op", values = { driver = { repository = "x" } } }`, 1)
			},
			want: []string{
				`f.toml:41:47: clusters.prod.gpu-operator.values: wrong type: got an inline table, want a string: write the release's chart values as the YAML of a Helm values file, values = '''...'''`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.edit(base)
			if src == base {
				t.Fatal("the edit changed nothing")
			}
			wantProblems(t, src, tt.want)
		})
	}
}

// withValues replaces stg's values in the adopted fleet with line.
func withValues(s, line string) string {
	start := strings.Index(s, "values = '''\n")
	end := strings.Index(s[start+len("values = '''\n"):], "'''\n") + start + len("values = '''\n") + len("'''\n")
	return s[:start] + line + "\n" + s[end:]
}
