package crdcheck

import (
	"k8s.io/apimachinery/pkg/runtime"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FillRequiredDefaults writes into obj every field its kind's schema
// requires and defaults that obj leaves out, at every level obj has (a
// required field of an object that is absent is not required). The API
// server would write the same defaults when it stores the object, so what
// runs does not change; checks that apply no defaults (kubeconform, `gpufleet
// validate` as written) then accept the object. A chart that counts on the
// server's default for a required field (the GPU Operator's ClusterPolicy
// leaves spec.operator.defaultRuntime to it) renders so. Kinds outside the
// set are left alone.
func (s *Set) FillRequiredDefaults(obj *unstructured.Unstructured) {
	cv := s.versions[obj.GroupVersionKind()]
	if cv == nil {
		return
	}
	fillRequired(obj.Object, cv.structural)
}

func fillRequired(v any, st *structuralschema.Structural) {
	if st == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if st.ValueValidation != nil {
			for _, k := range st.ValueValidation.Required {
				p, ok := st.Properties[k]
				if _, set := t[k]; set || !ok || p.Default.Object == nil {
					continue
				}
				t[k] = runtime.DeepCopyJSONValue(p.Default.Object)
			}
		}
		for k, val := range t {
			if p, ok := st.Properties[k]; ok {
				fillRequired(val, &p)
			} else if st.AdditionalProperties != nil {
				fillRequired(val, st.AdditionalProperties.Structural)
			}
		}
	case []any:
		for _, val := range t {
			fillRequired(val, st.Items)
		}
	}
}
