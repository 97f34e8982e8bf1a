package crdcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

func loadSet(t testing.TB, files ...string) *Set {
	t.Helper()
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, b...), "\n---\n"...)
	}
	crds, err := ParseCRDs(all)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(crds...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func decodeOne(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	objs, err := DecodeObjects([]byte(doc))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode: %v (%d objects)", err, len(objs))
	}
	return objs[0]
}

func messages(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Message())
	}
	return out
}

func TestValidateWidget(t *testing.T) {
	set := loadSet(t, "testdata/widgets-crd.yaml")
	head := "apiVersion: example.gpufleet.io/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\n"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"valid", head + "spec: {size: 1, mode: fast}", nil},
		{"unknown field", head + "spec: {size: 1, mode: fast, colour: red}", []string{"spec.colour: unknown field"}},
		{"unknown field in list item", head + "spec: {size: 1, mode: fast, ports: [{nmae: x}]}", []string{"spec.ports[0].nmae: unknown field"}}, //nolint:misspell // deliberately misspelled input
		{"unknown top-level field", head + "spec: {size: 1, mode: fast}\nspecs: {}", []string{"specs: unknown field"}},
		{"unknown metadata field", "apiVersion: example.gpufleet.io/v1\nkind: Widget\nmetadata: {name: w, lables: {a: b}}\nspec: {size: 1, mode: fast}", []string{"metadata.lables: unknown field"}},
		{"missing required", head + "spec: {mode: fast}", []string{"spec.size: Required value"}},
		{"wrong type", head + "spec: {size: one, mode: fast}", []string{`spec.size: Invalid value: "string": must be of type integer: "string"`}},
		{"enum", head + "spec: {size: 1, mode: medium}", []string{`spec.mode: Unsupported value: "medium": supported values: "fast", "slow"`}},
		{"pattern", head + "spec: {size: 1, mode: fast, color: Red}", []string{`spec.color: Invalid value: "Red": should match '^[a-z]+$'`}},
		{"null on non-nullable field is dropped", head + "spec: {size: 1, mode: fast, label: null}", nil},
		{"null replaced by default", head + "spec: {size: 1, mode: fast, enabled: null}", nil},
		{"cel rule", head + "spec: {size: 3, max: 2, mode: fast}", []string{`spec: Invalid value: max must not be below size`}},
		{"cel skipped after type error", head + "spec: {size: 3, max: 2, mode: 7}", []string{`spec.mode: Invalid value: "integer": must be of type string: "integer"`, `spec.mode: Unsupported value: 7: supported values: "fast", "slow"`}},
		{"missing name", "apiVersion: example.gpufleet.io/v1\nkind: Widget\nspec: {size: 1, mode: fast}", []string{"metadata.name: Required value: name or generateName is required"}},
		{"version not served", "apiVersion: example.gpufleet.io/v2\nkind: Widget\nmetadata: {name: w}", []string{"apiVersion: version v2 is not served by widgets.example.gpufleet.io (served: v1)"}},
		{"kind without crd", "apiVersion: example.gpufleet.io/v1\nkind: Gadget\nmetadata: {name: g}", []string{"no CustomResourceDefinition for kind Gadget in group example.gpufleet.io"}},
		{"builtin kind is not checked", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {bogus: 1}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decodeOne(t, tt.doc)
			before := obj.DeepCopy()
			got := messages(set.Validate(context.Background(), obj))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
				t.Errorf("Validate modified its input:\n%s", diff)
			}
		})
	}
}

func TestIsBuiltin(t *testing.T) {
	for group, want := range map[string]bool{
		"": true, "apps": true, "rbac.authorization.k8s.io": true, "nvidia.com": false,
		"gateway.networking.k8s.io": false, "nfd.k8s-sigs.io": false, "cluster.x-k8s.io": false,
	} {
		if got := IsBuiltin(group); got != want {
			t.Errorf("IsBuiltin(%q) = %v, want %v", group, got, want)
		}
	}
}

// operatorsDir finds the shared operator charts and CRDs next to the
// repository (../shared/operators from the directory holding go.mod), or
// skips the test when they are not there.
func operatorsDir(t testing.TB) string { return sharedtest.Operators(t) }

var gpuOperatorVersions = []string{"v24.6.2", "v24.9.2", "v25.3.4", "v25.10.1", "v26.7.0"}

func gpuOperatorSet(t testing.TB, ops, version string) *Set {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ops, "gpu-operator", version, "deployments", "gpu-operator", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs for gpu-operator %s: %v", version, err)
	}
	return loadSet(t, files...)
}

// TestNVIDIADriverAcrossVersions checks, against the real CRDs, the facts
// about NVIDIADriver that decide whether validate gives false alarms.
func TestNVIDIADriverAcrossVersions(t *testing.T) {
	ops := operatorsDir(t)
	const head = "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: h100}\nspec:\n  driverType: gpu\n  image: driver\n  repository: nvcr.io/nvidia\n"
	tests := []struct {
		name string
		spec string
		want map[string][]string // by version; missing means no problems
	}{
		{
			name: "minimal",
			spec: "  version: \"580.95.05\"\n",
		},
		{
			name: "misspelt nodeSelector",
			spec: "  nodeSelecter: {gpufleet.io/driver: \"580.95.05\"}\n",
			want: map[string][]string{
				"v24.6.2": {"spec.nodeSelecter: unknown field"}, "v24.9.2": {"spec.nodeSelecter: unknown field"},
				"v25.3.4": {"spec.nodeSelecter: unknown field"}, "v25.10.1": {"spec.nodeSelecter: unknown field"},
				"v26.7.0": {"spec.nodeSelecter: unknown field"},
			},
		},
		{
			name: "upgradePolicy only in v26.7.0",
			spec: "  upgradePolicy: {autoUpgrade: false}\n",
			want: map[string][]string{
				"v24.6.2": {"spec.upgradePolicy: unknown field"}, "v24.9.2": {"spec.upgradePolicy: unknown field"},
				"v25.3.4": {"spec.upgradePolicy: unknown field"}, "v25.10.1": {"spec.upgradePolicy: unknown field"},
			},
		},
		{
			name: "kernelModuleType from v25.3.4",
			spec: "  kernelModuleType: open\n",
			want: map[string][]string{
				"v24.6.2": {"spec.kernelModuleType: unknown field"}, "v24.9.2": {"spec.kernelModuleType: unknown field"},
			},
		},
		{
			name: "unquoted precompiled branch is an integer",
			spec: "  usePrecompiled: true\n  version: 570\n",
			want: map[string][]string{
				"v24.6.2": {`spec.version: Invalid value: "integer": must be of type string: "integer"`}, "v24.9.2": {`spec.version: Invalid value: "integer": must be of type string: "integer"`},
				"v25.3.4": {`spec.version: Invalid value: "integer": must be of type string: "integer"`}, "v25.10.1": {`spec.version: Invalid value: "integer": must be of type string: "integer"`},
				"v26.7.0": {`spec.version: Invalid value: "integer": must be of type string: "integer"`},
			},
		},
		{
			name: "enum",
			spec: "  kernelModuleType: closed\n",
			want: map[string][]string{
				"v24.6.2": {"spec.kernelModuleType: unknown field"}, "v24.9.2": {"spec.kernelModuleType: unknown field"},
				"v25.3.4": {`spec.kernelModuleType: Unsupported value: "closed": supported values: "auto", "open", "proprietary"`}, "v25.10.1": {`spec.kernelModuleType: Unsupported value: "closed": supported values: "auto", "open", "proprietary"`},
				"v26.7.0": {`spec.kernelModuleType: Unsupported value: "closed": supported values: "auto", "open", "proprietary"`},
			},
		},
		{
			name: "default driver with nodeSelector breaks the CEL rule",
			spec: "  default: true\n  nodeSelector: {a: b}\n",
			want: map[string][]string{
				"v24.6.2": {"spec.default: unknown field"}, "v24.9.2": {"spec.default: unknown field"},
				"v25.3.4": {"spec.default: unknown field"}, "v25.10.1": {"spec.default: unknown field"},
				"v26.7.0": {`spec: Invalid value: default NVIDIADriver must not use nodeSelector`},
			},
		},
	}
	sets := map[string]*Set{}
	for _, v := range gpuOperatorVersions {
		sets[v] = gpuOperatorSet(t, ops, v)
	}
	for _, tt := range tests {
		for _, v := range gpuOperatorVersions {
			t.Run(tt.name+"/"+v, func(t *testing.T) {
				obj := decodeOne(t, head+tt.spec)
				got := messages(sets[v].Validate(context.Background(), obj))
				if diff := cmp.Diff(tt.want[v], got); diff != "" {
					t.Errorf("problems (-want +got):\n%s", diff)
				}
			})
		}
	}
	gk := schema.GroupKind{Group: "nvidia.com", Kind: "NVIDIADriver"}
	if !sets["v26.7.0"].HasPath(gk, "spec.upgradePolicy") || sets["v25.10.1"].HasPath(gk, "spec.upgradePolicy") {
		t.Error("HasPath(spec.upgradePolicy) should hold in v26.7.0 only")
	}
	if !sets["v26.7.0"].HasPath(gk, "spec.env[3].name") {
		t.Error("HasPath should follow list indices into the items")
	}
}

func TestDiffNVIDIADriver(t *testing.T) {
	ops := operatorsDir(t)
	a, b := gpuOperatorSet(t, ops, "v25.3.4"), gpuOperatorSet(t, ops, "v25.10.1")
	var got []string
	for _, c := range Diff(a.CRDs(), b.CRDs()) {
		if c.Kind == "NVIDIADriver" {
			got = append(got, c.Op+" "+c.Version+" "+c.Path+" "+c.Detail)
		}
	}
	want := []string{
		`added v1alpha1 spec.licensingConfig.secretName {"type":"string"}`,
		`added v1alpha1 spec.secretEnv {"type":"string"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NVIDIADriver changes (-want +got):\n%s", diff)
	}

	a, b = gpuOperatorSet(t, ops, "v25.10.1"), gpuOperatorSet(t, ops, "v26.7.0")
	got = nil
	for _, c := range Diff(a.CRDs(), b.CRDs()) {
		if c.Kind == "NVIDIADriver" && (c.Path == "spec" || c.Path == "spec.default" || c.Path == "spec.upgradePolicy.autoUpgrade") {
			got = append(got, c.Op+" "+c.Path+" "+c.Detail)
		}
	}
	for _, w := range []string{"added spec.default ", "added spec.upgradePolicy.autoUpgrade ", "changed spec required: "} {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("no change starting %q in %q", w, got)
		}
	}
}

func TestNewSetRejectsNonStructural(t *testing.T) {
	crds, err := ParseCRDs([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.gpufleet.io}
spec:
  group: example.gpufleet.io
  names: {kind: Thing, plural: things}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewSet(crds...)
	want := "crd things.example.gpufleet.io: version v1: schema is not structural: properties[spec].type: Required value: must not be empty for specified object fields"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
