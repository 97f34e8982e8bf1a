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
// properties whose change can make the API server refuse, prune or default
// an object differently: type, enum, default, required, bounds, CEL rules and
// the like. Descriptions and examples are left out: they change nothing.
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

	// Bounds: a value outside them is refused.
	Minimum          *float64 `json:"minimum,omitempty"`
	ExclusiveMinimum bool     `json:"exclusiveMinimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	ExclusiveMaximum bool     `json:"exclusiveMaximum,omitempty"`
	MultipleOf       *float64 `json:"multipleOf,omitempty"`
	MinLength        *int64   `json:"minLength,omitempty"`
	MaxLength        *int64   `json:"maxLength,omitempty"`
	MinItems         *int64   `json:"minItems,omitempty"`
	MaxItems         *int64   `json:"maxItems,omitempty"`
	UniqueItems      bool     `json:"uniqueItems,omitempty"`
	MinProperties    *int64   `json:"minProperties,omitempty"`
	MaxProperties    *int64   `json:"maxProperties,omitempty"`
	// OneOf, AnyOf, AllOf and Not are the sub-schemas as compact JSON: a
	// value must also satisfy them.
	OneOf string `json:"oneOf,omitempty"`
	AnyOf string `json:"anyOf,omitempty"`
	AllOf string `json:"allOf,omitempty"`
	Not   string `json:"not,omitempty"`
	// Rules are the CEL validation rules (x-kubernetes-validations), e.g.
	// v26.7.0's "a default NVIDIADriver must not have a nodeSelector".
	Rules []Rule `json:"x-kubernetes-validations,omitempty"`
	// PreserveUnknownFields keeps fields the schema does not name instead of
	// pruning them; EmbeddedResource marks a nested object with its own
	// apiVersion, kind and metadata.
	PreserveUnknownFields bool `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	EmbeddedResource      bool `json:"x-kubernetes-embedded-resource,omitempty"`
	// ListType, ListMapKeys and MapType say how lists and maps merge; a
	// "set" or "map" list also refuses duplicates.
	ListType    string   `json:"x-kubernetes-list-type,omitempty"`
	ListMapKeys []string `json:"x-kubernetes-list-map-keys,omitempty"`
	MapType     string   `json:"x-kubernetes-map-type,omitempty"`
}

// Rule is one CEL validation rule of a field.
type Rule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	Reason            string `json:"reason,omitempty"`
	FieldPath         string `json:"fieldPath,omitempty"`
	OptionalOldSelf   bool   `json:"optionalOldSelf,omitempty"`
}

// RootPath names the object itself among the field paths, for what the
// schema says about the whole object (a CEL rule over metadata.name, say).
const RootPath = "."

// Fields flattens the schema of every version of crd into one Field per path.
// Paths start at the object root ("spec.driverType"); "[]" stands for the
// items of an array and "{*}" for the values of a map, as in
// "spec.env[].name" and "spec.resources.limits{*}"; RootPath is the object
// itself. The outer map is keyed by CRD version name.
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
	key := path
	if key == "" {
		key = RootPath
	}
	out[key] = fieldOf(s)
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
	f.Minimum, f.ExclusiveMinimum = s.Minimum, s.ExclusiveMinimum
	f.Maximum, f.ExclusiveMaximum = s.Maximum, s.ExclusiveMaximum
	f.MultipleOf = s.MultipleOf
	f.MinLength, f.MaxLength = s.MinLength, s.MaxLength
	f.MinItems, f.MaxItems, f.UniqueItems = s.MinItems, s.MaxItems, s.UniqueItems
	f.MinProperties, f.MaxProperties = s.MinProperties, s.MaxProperties
	f.OneOf, f.AnyOf, f.AllOf = compactJSON(s.OneOf), compactJSON(s.AnyOf), compactJSON(s.AllOf)
	f.Not = compactJSON(s.Not)
	for _, r := range s.XValidations {
		f.Rules = append(f.Rules, Rule{
			Rule: r.Rule, Message: r.Message, MessageExpression: r.MessageExpression,
			Reason: string(ptrOr(r.Reason)), FieldPath: r.FieldPath, OptionalOldSelf: ptrOr(r.OptionalOldSelf),
		})
	}
	f.PreserveUnknownFields = ptrOr(s.XPreserveUnknownFields)
	f.EmbeddedResource = s.XEmbeddedResource
	f.ListType, f.MapType = ptrOr(s.XListType), ptrOr(s.XMapType)
	f.ListMapKeys = s.XListMapKeys
	return f
}

// compactJSON renders sub-schemas as JSON for comparison; "" for none.
func compactJSON[T any](v T) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" {
		return ""
	}
	return string(b)
}

func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// String renders the field as compact JSON, e.g. {"type":"string","enum":["auto","open"]}.
func (f Field) String() string {
	b, _ := json.Marshal(f)
	return string(b)
}

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// HasPath says whether some version of kind gk in the set declares the field
// at path, a path as the API server reports it ("spec.env[0].name"): list
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
