package crdcheck

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Field is what a schema says about one field path, reduced to the
// properties whose change can break an object: type, enum, default,
// required and the like.
type Field struct {
	Type     string            `json:"type,omitempty"`
	Format   string            `json:"format,omitempty"`
	Enum     []json.RawMessage `json:"enum,omitempty"`
	Default  json.RawMessage   `json:"default,omitempty"`
	Required []string          `json:"required,omitempty"`
	Pattern  string            `json:"pattern,omitempty"`
	Nullable bool              `json:"nullable,omitempty"`
	// IntOrString marks x-kubernetes-int-or-string fields (which have no type).
	IntOrString bool `json:"x-kubernetes-int-or-string,omitempty"`
}

// Fields flattens the schema of every version of crd into one Field per path.
// Paths start at the object root ("spec.driverType"); "[]" stands for the
// items of an array and "{*}" for the values of a map, as in
// "spec.env[].name" and "spec.resources.limits{*}". The outer map is keyed by
// CRD version name.
func Fields(crd *apiextensionsv1.CustomResourceDefinition) map[string]map[string]Field {
	out := map[string]map[string]Field{}
	for _, v := range crd.Spec.Versions {
		fields := map[string]Field{}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			flatten("", v.Schema.OpenAPIV3Schema, fields)
		}
		out[v.Name] = fields
	}
	return out
}

func flatten(path string, s *apiextensionsv1.JSONSchemaProps, out map[string]Field) {
	if path != "" {
		out[path] = fieldOf(s)
	}
	for name, p := range s.Properties {
		flatten(join(path, name), &p, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		flatten(path+"[]", s.Items.Schema, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		flatten(path+"{*}", s.AdditionalProperties.Schema, out)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func fieldOf(s *apiextensionsv1.JSONSchemaProps) Field {
	f := Field{Type: s.Type, Format: s.Format, Pattern: s.Pattern, Nullable: s.Nullable, IntOrString: s.XIntOrString}
	for _, e := range s.Enum {
		f.Enum = append(f.Enum, json.RawMessage(e.Raw))
	}
	if s.Default != nil {
		f.Default = json.RawMessage(s.Default.Raw)
	}
	if len(s.Required) > 0 {
		f.Required = append([]string(nil), s.Required...)
		sort.Strings(f.Required)
	}
	return f
}

// String renders the field as compact JSON, e.g. {"type":"string","enum":["auto","open"]}.
func (f Field) String() string {
	b, _ := json.Marshal(f)
	return string(b)
}

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// HasPath says whether some version of kind gk in the set declares the field
// at path, a path as the API server reports it ("spec.env[0].nmae"): list
// indices match the array's items, and any key matches a map's values.
func (s *Set) HasPath(gk schema.GroupKind, path string) bool {
	crd, ok := s.kinds[gk]
	if !ok {
		return false
	}
	segs := strings.Split(indexRE.ReplaceAllString(path, ".[]"), ".")
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil && walk(v.Schema.OpenAPIV3Schema, segs) {
			return true
		}
	}
	return false
}

func walk(s *apiextensionsv1.JSONSchemaProps, segs []string) bool {
	for _, seg := range segs {
		switch {
		case seg == "":
			continue
		case seg == "[]":
			if s.Items == nil || s.Items.Schema == nil {
				return false
			}
			s = s.Items.Schema
		default:
			if p, ok := s.Properties[seg]; ok {
				s = &p
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				s = s.AdditionalProperties.Schema
				continue
			}
			return false
		}
	}
	return true
}
