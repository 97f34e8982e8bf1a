package crdcheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFillRequiredDefaults: a required field with a default is written
// where its object is present and the field is not, at any depth and in
// list items; a field set stays as it is; an optional field with a default
// and a required one without stay unwritten; an absent object gets
// nothing.
func TestFillRequiredDefaults(t *testing.T) {
	crds, err := ParseCRDs([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
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
            type: object
            properties:
              operator:
                type: object
                required: [defaultRuntime, name]
                properties:
                  defaultRuntime: {type: string, default: docker}
                  name: {type: string}
                  optional: {type: string, default: x}
              absent:
                type: object
                required: [mode]
                properties:
                  mode: {type: string, default: auto}
              items:
                type: array
                items:
                  type: object
                  required: [weight]
                  properties:
                    weight: {type: integer, default: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(crds...)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
		"spec": map[string]any{
			"operator": map[string]any{"name": "n"},
			"items":    []any{map[string]any{}, map[string]any{"weight": int64(5)}},
		},
	}}
	s.FillRequiredDefaults(obj)
	want := map[string]any{
		"operator": map[string]any{"name": "n", "defaultRuntime": "docker"},
		"items":    []any{map[string]any{"weight": int64(1)}, map[string]any{"weight": int64(5)}},
	}
	if diff := cmp.Diff(want, obj.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if p := s.ValidateAsWritten(t.Context(), obj); len(p) > 0 {
		t.Errorf("still refused as written: %v", p)
	}
}
