package crdcheck

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DropNulls removes from obj the null values that server-side apply would
// refuse, which is how Flux's kustomize-controller applies: a null at a
// field that the kind's schema does not mark nullable ("spec.validator.plugin:
// Invalid value: null" for a ClusterPolicy as the GPU Operator's chart
// renders it). Helm never meets this because a plain create lets the API
// server drop such nulls. For kinds outside the set (built-in kinds) every
// null map value goes: their Go types read null as "not set" anyway. Nulls
// inside lists are kept, since dropping one would shift the others.
func (s *Set) DropNulls(obj *unstructured.Unstructured) {
	var st *structuralschema.Structural
	if cv := s.versions[obj.GroupVersionKind()]; cv != nil {
		st = cv.structural
	}
	dropNulls(obj.Object, st, st == nil)
}

// dropNulls walks v along schema st. With all, st is ignored and every null
// map value goes.
func dropNulls(v any, st *structuralschema.Structural, all bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			child := childSchema(st, k, all)
			if val == nil {
				if all || child == nil || !child.Nullable {
					delete(t, k)
				}
				continue
			}
			dropNulls(val, child, all || child == nil)
		}
	case []any:
		var items *structuralschema.Structural
		if !all && st != nil {
			items = st.Items
		}
		for _, val := range t {
			dropNulls(val, items, all || items == nil)
		}
	}
}

// childSchema is the schema of field k of an object of schema st, or nil
// when st says nothing about it (then everything below is walked with all).
func childSchema(st *structuralschema.Structural, k string, all bool) *structuralschema.Structural {
	if all || st == nil {
		return nil
	}
	if p, ok := st.Properties[k]; ok {
		return &p
	}
	if st.AdditionalProperties != nil && st.AdditionalProperties.Structural != nil {
		return st.AdditionalProperties.Structural
	}
	return nil
}
