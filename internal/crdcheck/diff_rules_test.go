package crdcheck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// widgetCRD is a one-version CRD whose spec schema is spec (YAML, indented
// to sit under properties.spec) and whose root carries rootRules.
func widgetCRD(t *testing.T, spec, rootRules string) []byte {
	t.Helper()
	indent := func(s string, n int) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+pad)
	}
	doc := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.gpufleet.io}
spec:
  group: example.gpufleet.io
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
` + indent(spec, 12) + "\n"
	if rootRules != "" {
		doc += "        x-kubernetes-validations:\n" + indent(rootRules, 8) + "\n"
	}
	return []byte(doc)
}

// TestDiffReportsCELRulesAndBounds: crd-diff reports what the API server
// enforces beyond types: CEL rules (x-kubernetes-validations) added, removed
// or reworded, at a field or at the object root, and changed bounds
// (minimum, maximum, lengths, item counts), list types and pruning.
func TestDiffReportsCELRulesAndBounds(t *testing.T) {
	a := widgetCRD(t, `
type: object
properties:
  replicas: {type: integer, minimum: 0, maximum: 10}
  name: {type: string, maxLength: 10}
  mode:
    type: string
    x-kubernetes-validations:
    - {rule: "self == oldSelf", message: "mode is immutable"}
  hosts: {type: array, items: {type: string}}
  extra: {type: object}
`, "")
	b := widgetCRD(t, `
type: object
properties:
  replicas: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true}
  name: {type: string, minLength: 1, maxLength: 20}
  mode:
    type: string
    x-kubernetes-validations:
    - {rule: "self == oldSelf", message: "mode cannot change"}
  hosts: {type: array, maxItems: 4, x-kubernetes-list-type: set, items: {type: string}}
  extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
x-kubernetes-validations:
- {rule: "!has(self.default) || !self.default || !has(self.nodeSelector)", message: "a default widget must not use nodeSelector"}
`, `- {rule: "self.metadata.name == 'only'", message: "Widget is a singleton"}`)
	crdsA, err := ParseCRDs(a)
	if err != nil {
		t.Fatal(err)
	}
	crdsB, err := ParseCRDs(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Diff(crdsA, crdsB) {
		got = append(got, c.Op+" "+c.Path+" "+c.Detail)
	}
	want := []string{
		`changed . x-kubernetes-validations: added rule "self.metadata.name == 'only'" (message "Widget is a singleton")`,
		`changed spec x-kubernetes-validations: added rule "!has(self.default) || !self.default || !has(self.nodeSelector)" (message "a default widget must not use nodeSelector")`,
		`changed spec.extra x-kubernetes-preserve-unknown-fields: false → true`,
		`changed spec.hosts maxItems: (none) → 4; x-kubernetes-list-type: (none) → set`,
		`changed spec.mode x-kubernetes-validations: rule "self == oldSelf": message "mode is immutable" → message "mode cannot change"`,
		`changed spec.name minLength: (none) → 1; maxLength: 10 → 20`,
		`changed spec.replicas minimum: 0 → 1; maximum: 10 → 10 (exclusive)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	// And back: the rules are reported removed.
	got = nil
	for _, c := range Diff(crdsB, crdsA) {
		if c.Path == "." || c.Path == "spec" {
			got = append(got, c.Op+" "+c.Path+" "+c.Detail)
		}
	}
	want = []string{
		`changed . x-kubernetes-validations: removed rule "self.metadata.name == 'only'" (message "Widget is a singleton")`,
		`changed spec x-kubernetes-validations: removed rule "!has(self.default) || !self.default || !has(self.nodeSelector)" (message "a default widget must not use nodeSelector")`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes back (-want +got):\n%s", diff)
	}

	t.Run("GPU Operator v26.7.0", func(t *testing.T) {
		ops := operatorsDir(t)
		old, cur := gpuOperatorSet(t, ops, "v25.10.1"), gpuOperatorSet(t, ops, "v26.7.0")
		const rule = `x-kubernetes-validations: added rule "has(self.default) && self.default ? !has(self.nodeSelector) || size(self.nodeSelector) == 0 : true" (message "default NVIDIADriver must not use nodeSelector")`
		found := false
		for _, c := range Diff(old.CRDs(), cur.CRDs()) {
			if c.Kind == "NVIDIADriver" && c.Path == "spec" && c.Op == Changed {
				found = strings.Contains(c.Detail, rule)
				if !found {
					t.Errorf("NVIDIADriver spec change lacks the new rule:\n%s", c.Detail)
				}
			}
		}
		if !found {
			t.Error("no change of NVIDIADriver spec between v25.10.1 and v26.7.0")
		}
	})
}
