package crdcheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Change kinds in a schema diff.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Change is one difference between the schemas of two CRD sets.
type Change struct {
	// Group and Kind name the CRD; Version is the CRD version (v1alpha1).
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	// Path is the field path, empty when the whole kind or version changed.
	Path string `json:"path,omitempty"`
	// Op is added, removed or changed.
	Op string `json:"op"`
	// Detail says what changed, e.g. `type: string → integer`, or for an added
	// or removed path what the field is.
	Detail string `json:"detail,omitempty"`
}

// Diff lists what changed from the CRDs in a to those in b, sorted by kind,
// version and path: kinds and versions added or removed, and for each field
// path (RootPath for the object itself) whether it was added, removed, or
// changed anything the API server checks: type, format, enum, default,
// pattern, required list, nullability, int-or-string, bounds (minimum,
// maximum, lengths, item and property counts, multipleOf, uniqueness),
// oneOf/anyOf/allOf/not, CEL rules (x-kubernetes-validations), pruning
// (x-kubernetes-preserve-unknown-fields) and list and map types. A new CEL
// rule refuses objects the old version accepted, so it is as much a breaking
// change as a new required field.
func Diff(a, b []*apiextensionsv1.CustomResourceDefinition) []Change {
	ka, kb := byKind(a), byKind(b)
	var out []Change
	for _, gk := range unionKeys(ka, kb) {
		ca, cb := ka[gk], kb[gk]
		switch {
		case ca == nil:
			out = append(out, Change{Group: gk.Group, Kind: gk.Kind, Op: Added, Detail: "kind " + cb.Name})
			continue
		case cb == nil:
			out = append(out, Change{Group: gk.Group, Kind: gk.Kind, Op: Removed, Detail: "kind " + ca.Name})
			continue
		}
		fa, fb := Fields(ca), Fields(cb)
		for _, ver := range unionKeys(fa, fb) {
			va, okA := fa[ver]
			vb, okB := fb[ver]
			c := Change{Group: gk.Group, Kind: gk.Kind, Version: ver}
			if !okA || !okB {
				c.Op, c.Detail = Added, "version"
				if !okB {
					c.Op = Removed
				}
				out = append(out, c)
				continue
			}
			out = append(out, diffFields(c, va, vb)...)
		}
	}
	return out
}

func diffFields(base Change, a, b map[string]Field) []Change {
	var out []Change
	for _, path := range unionKeys(a, b) {
		fa, okA := a[path]
		fb, okB := b[path]
		c := base
		c.Path = path
		switch {
		case !okA:
			c.Op, c.Detail = Added, fb.String()
		case !okB:
			c.Op, c.Detail = Removed, fa.String()
		default:
			d := fieldChanges(fa, fb)
			if d == "" {
				continue
			}
			c.Op, c.Detail = Changed, d
		}
		out = append(out, c)
	}
	return out
}

// fieldChanges describes how a field changed, e.g.
// `required: [driverType image] → [default driverType image]`.
func fieldChanges(a, b Field) string {
	var parts []string
	add := func(name, x, y string) {
		if x != y {
			parts = append(parts, fmt.Sprintf("%s: %s → %s", name, orNone(x), orNone(y)))
		}
	}
	add("type", a.Type, b.Type)
	add("format", a.Format, b.Format)
	add("enum", rawList(a.Enum), rawList(b.Enum))
	add("default", string(a.Default), string(b.Default))
	add("pattern", a.Pattern, b.Pattern)
	add("required", list(a.Required), list(b.Required))
	add("nullable", fmt.Sprint(a.Nullable), fmt.Sprint(b.Nullable))
	add("int-or-string", fmt.Sprint(a.IntOrString), fmt.Sprint(b.IntOrString))
	add("minimum", bound(a.Minimum, a.ExclusiveMinimum), bound(b.Minimum, b.ExclusiveMinimum))
	add("maximum", bound(a.Maximum, a.ExclusiveMaximum), bound(b.Maximum, b.ExclusiveMaximum))
	add("multipleOf", bound(a.MultipleOf, false), bound(b.MultipleOf, false))
	add("minLength", count(a.MinLength), count(b.MinLength))
	add("maxLength", count(a.MaxLength), count(b.MaxLength))
	add("minItems", count(a.MinItems), count(b.MinItems))
	add("maxItems", count(a.MaxItems), count(b.MaxItems))
	add("uniqueItems", fmt.Sprint(a.UniqueItems), fmt.Sprint(b.UniqueItems))
	add("minProperties", count(a.MinProperties), count(b.MinProperties))
	add("maxProperties", count(a.MaxProperties), count(b.MaxProperties))
	add("oneOf", a.OneOf, b.OneOf)
	add("anyOf", a.AnyOf, b.AnyOf)
	add("allOf", a.AllOf, b.AllOf)
	add("not", a.Not, b.Not)
	parts = append(parts, ruleChanges(a.Rules, b.Rules)...)
	add("x-kubernetes-preserve-unknown-fields", fmt.Sprint(a.PreserveUnknownFields), fmt.Sprint(b.PreserveUnknownFields))
	add("x-kubernetes-embedded-resource", fmt.Sprint(a.EmbeddedResource), fmt.Sprint(b.EmbeddedResource))
	add("x-kubernetes-list-type", a.ListType, b.ListType)
	add("x-kubernetes-list-map-keys", list(a.ListMapKeys), list(b.ListMapKeys))
	add("x-kubernetes-map-type", a.MapType, b.MapType)
	return strings.Join(parts, "; ")
}

// ruleChanges describes how the CEL rules of a field changed, one part per
// rule added or removed, and per rule whose message or options changed.
// Rules are matched by their expression, so reordering them is no change.
func ruleChanges(a, b []Rule) []string {
	byExpr := func(rules []Rule) map[string]Rule {
		m := map[string]Rule{}
		for _, r := range rules {
			m[r.Rule] = r
		}
		return m
	}
	ma, mb := byExpr(a), byExpr(b)
	var parts []string
	for _, expr := range unionKeys(ma, mb) {
		ra, okA := ma[expr]
		rb, okB := mb[expr]
		switch {
		case !okA:
			parts = append(parts, "x-kubernetes-validations: added rule "+describeRule(rb))
		case !okB:
			parts = append(parts, "x-kubernetes-validations: removed rule "+describeRule(ra))
		case ra != rb:
			parts = append(parts, fmt.Sprintf("x-kubernetes-validations: rule %q: %s → %s", expr, orNone(ruleOptions(ra)), orNone(ruleOptions(rb))))
		}
	}
	return parts
}

func describeRule(r Rule) string {
	if opts := ruleOptions(r); opts != "" {
		return fmt.Sprintf("%q (%s)", r.Rule, opts)
	}
	return fmt.Sprintf("%q", r.Rule)
}

// ruleOptions lists what a rule says besides its expression.
func ruleOptions(r Rule) string {
	var o []string
	if r.Message != "" {
		o = append(o, fmt.Sprintf("message %q", r.Message))
	}
	if r.MessageExpression != "" {
		o = append(o, fmt.Sprintf("messageExpression %q", r.MessageExpression))
	}
	if r.Reason != "" {
		o = append(o, "reason "+r.Reason)
	}
	if r.FieldPath != "" {
		o = append(o, "fieldPath "+r.FieldPath)
	}
	if r.OptionalOldSelf {
		o = append(o, "optionalOldSelf")
	}
	return strings.Join(o, ", ")
}

// bound formats a numeric bound, exclusive ones marked: "0", "0 (exclusive)".
func bound(v *float64, exclusive bool) string {
	if v == nil {
		return ""
	}
	s := strconv.FormatFloat(*v, 'g', -1, 64)
	if exclusive {
		s += " (exclusive)"
	}
	return s
}

func count(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func list(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return "[" + strings.Join(xs, " ") + "]"
}

func rawList(xs []json.RawMessage) string {
	var s []string
	for _, x := range xs {
		s = append(s, string(x))
	}
	return list(s)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func byKind(crds []*apiextensionsv1.CustomResourceDefinition) map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition {
	m := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range crds {
		m[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] = c
	}
	return m
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[K comparable, V any](a, b map[K]V) []K {
	seen := map[K]bool{}
	var keys []K
	for _, m := range []map[K]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keyString(keys[i]) < keyString(keys[j]) })
	return keys
}

func keyString(k any) string {
	if gk, ok := k.(schema.GroupKind); ok {
		return gk.Kind + "." + gk.Group
	}
	return fmt.Sprint(k)
}
