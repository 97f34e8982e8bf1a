package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// checkFastYAML holds fastYAML to goyaml.v2's bytes for m; it returns
// whether fastYAML wrote it itself.
func checkFastYAML(t *testing.T, name string, m map[string]any) bool {
	t.Helper()
	want, err := goyaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := fastYAML(m)
	if ok && !bytes.Equal(got, want) {
		t.Errorf("%s: fastYAML differs from goyaml.v2:\n--- goyaml.v2\n%s--- fastYAML\n%s", name, want, got)
	}
	return ok
}

// TestFastYAMLIsGoyaml: on every object render writes for the example
// fleet and a synthetic one mid-rollout, fastYAML writes goyaml.v2's bytes.
func TestFastYAMLIsGoyaml(t *testing.T) {
	example, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	synthetic, err := fleet.Parse("fleet.toml", fleettest.Fleet(t, fleettest.Options{Clusters: 30, Rollout: true}))
	if err != nil {
		t.Fatal(err)
	}
	fast, all := 0, 0
	for _, f := range []*fleet.Fleet{example, synthetic} {
		out, err := Render(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range out.Paths() {
			if !strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, "kustomization.yaml") {
				continue
			}
			body := bytes.TrimPrefix(out.Files[p], []byte(Header))
			j, err := yaml.YAMLToJSON(body)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var m map[string]any
			if err := json.Unmarshal(j, &m); err != nil || m == nil {
				continue // not one object
			}
			all++
			if checkFastYAML(t, p, m) {
				fast++
			}
		}
	}
	t.Logf("fastYAML wrote %d of %d objects itself", fast, all)
}

// TestFastYAMLLeavesTheRestToGoyaml: values whose spelling depends on
// more than fastYAML knows are either written as goyaml.v2 writes them or
// left to it.
func TestFastYAMLLeavesTheRestToGoyaml(t *testing.T) {
	values := []any{
		"", "true", "True", "yes", "no", "on", "off", "null", "~", "y", "n", "0.9", "1", "0x1f", "1e3", "1_000",
		"2026-12-21", "12:30", "1:30:00", "-x", "- x", ":x", "x:", "x: y", "x #y", "#x", "*x", "&x", "!x", "|x", ">x",
		"'x'", `"x"`, "%x", "@x", "`x", "[x]", "{x}", ",x", "?x", "x?", "a b", "a\nb", "a\n", " a", "a ", "é", "a\tb",
		"570.172.08", "v25.3.4", "NVIDIA-H100-80GB-HBM3", "https://helm.ngc.nvidia.com/nvidia", "oci://r/x", "nvidia.com/gpu.product",
		strings.Repeat("long-", 30), strings.Repeat("with space ", 12),
		0.0, 1.0, -1.0, 0.5, 1e21, 123456789.0, true, false, nil,
		map[string]any{}, []any{}, []any{"a", 1.0, nil}, []any{map[string]any{"a": 1.0, "b": map[string]any{"c": []any{"d"}}}},
		[]any{[]any{"a"}}, []any{map[string]any{}}, map[string]any{"k": []any{map[string]any{"x": []any{}, "y": map[string]any{}}}},
	}
	keys := []string{"a", "b", "B", "_a", "a_b", "aB", "a-b", "a.b", "a/b", "a1", "a10", "a2", "a01", "1", "10", "true", "", "x y", "é"}
	// Words at every length around goyaml.v2's width of 80, at two depths.
	for n := 1; n < 20; n++ {
		values = append(values, strings.TrimSpace(strings.Repeat("word ", n)), strings.Repeat("ab ", n)+"year-end")
	}
	for i, v := range values {
		checkFastYAML(t, fmt.Sprintf("nested %d %q", i, v), map[string]any{"a": map[string]any{"bb": map[string]any{"a-longer-key": v}}})
		checkFastYAML(t, fmt.Sprintf("value %d %q", i, v), map[string]any{"key": v})
		checkFastYAML(t, fmt.Sprintf("item %d %q", i, v), map[string]any{"list": []any{v, v}})
	}
	for i := range keys {
		for j := range keys {
			checkFastYAML(t, fmt.Sprintf("keys %q %q", keys[i], keys[j]), map[string]any{keys[i]: 1.0, keys[j]: "x", "m": map[string]any{keys[i]: keys[j]}})
		}
	}
}
