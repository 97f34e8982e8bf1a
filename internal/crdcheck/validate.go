package crdcheck

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// RuleUnknownField is the rule of a problem about a field the schema does not
// declare. The API server drops such fields silently (or rejects them with
// strict field validation); either way the setting has no effect.
const RuleUnknownField = "unknown field"

// Problem is one way an object breaks the CRD schema of its kind.
type Problem struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Path is the field path, e.g. spec.nodeSelecter; empty for the object as a whole.
	Path string `json:"path,omitempty"`
	// Rule is the rule broken, e.g. "unknown field" or `Required value`.
	Rule string `json:"rule"`
	// Hint adds what helps fix it, e.g. "exists in gpu-operator v26.7.0".
	Hint string `json:"hint,omitempty"`
}

// Message is the problem without the object: "spec.nodeSelecter: unknown field".
func (p Problem) Message() string {
	msg := p.Rule
	if p.Path != "" {
		msg = p.Path + ": " + p.Rule
	}
	if p.Hint != "" {
		msg += " (" + p.Hint + ")"
	}
	return msg
}

// Object names the object as kubectl would: NVIDIADriver/h100 or Kind/ns/name.
func (p Problem) Object() string {
	if p.Namespace != "" {
		return p.Kind + "/" + p.Namespace + "/" + p.Name
	}
	return p.Kind + "/" + p.Name
}

// RuleDefaultedRequired is the hint of a problem about a required field left
// out because the schema defaults it: the API server accepts the object,
// offline checks that apply no defaults (kubeconform, the check Flux's
// example repositories run in CI) reject it.
const RuleDefaultedRequired = "the API server defaults it; checks without defaults, such as kubeconform, reject the object"

// Validate checks obj against the set the way the API server checks a create
// request, and returns its problems sorted by path. Objects of built-in
// Kubernetes groups are not checked; a custom kind the set does not define is
// one problem. obj is not modified.
func (s *Set) Validate(ctx context.Context, obj *unstructured.Unstructured) []Problem {
	return s.validate(ctx, obj, true)
}

// ValidateAsWritten is Validate, and also reports each required field the
// object leaves to the schema's default (with RuleDefaultedRequired as the
// hint): what a tool writes itself should stand on its own, whoever checks it.
func (s *Set) ValidateAsWritten(ctx context.Context, obj *unstructured.Unstructured) []Problem {
	problems := s.validate(ctx, obj, true)
	for _, p := range s.validate(ctx, obj, false) {
		if strings.HasPrefix(p.Rule, "Required value") && !slices.Contains(problems, p) {
			p.Hint = RuleDefaultedRequired
			problems = append(problems, p)
		}
	}
	sortProblems(problems)
	return problems
}

func (s *Set) validate(ctx context.Context, obj *unstructured.Unstructured, defaults bool) []Problem {
	gvk := obj.GroupVersionKind()
	if IsBuiltin(gvk.Group) {
		return nil
	}
	base := Problem{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	fail := func(path, rule string) Problem {
		p := base
		p.Path, p.Rule = path, rule
		return p
	}
	crd, ok := s.kinds[gvk.GroupKind()]
	if !ok {
		return []Problem{fail("", fmt.Sprintf("no CustomResourceDefinition for kind %s in group %s", gvk.Kind, gvk.Group))}
	}
	v, ok := s.versions[gvk]
	if !ok {
		var served []string
		for _, cv := range crd.Spec.Versions {
			if cv.Served {
				served = append(served, cv.Name)
			}
		}
		return []Problem{fail("apiVersion", fmt.Sprintf("version %s is not served by %s (served: %s)", gvk.Version, crd.Name, strings.Join(served, ", ")))}
	}

	u := obj.DeepCopy().Object
	var problems []Problem
	var unknown []string
	_, _, metaUnknown, err := objectmeta.GetObjectMetaWithOptions(u, objectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		problems = append(problems, fail("metadata", err.Error()))
	}
	unknown = append(unknown, metaUnknown...)
	if v.structural != nil {
		// Same order as the API server: defaults are applied while decoding
		// (replacing nulls that have a default), then unknown fields are
		// pruned and the remaining nulls on non-nullable fields dropped.
		if defaults {
			defaulting.Default(u, v.structural)
		}
		unknown = append(unknown, pruning.PruneWithOptions(u, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
		defaulting.PruneNonNullableNullsWithoutDefaults(u, v.structural)
		ferr, paths := objectmeta.CoerceWithOptions(nil, u, v.structural, false, objectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
		if ferr != nil {
			problems = append(problems, fromFieldError(base, ferr))
		}
		unknown = append(unknown, paths...)
	}
	for _, path := range unknown {
		problems = append(problems, fail(path, RuleUnknownField))
	}
	if name := obj.GetName(); name == "" && obj.GetGenerateName() == "" {
		problems = append(problems, fail("metadata.name", "Required value: name or generateName is required"))
	}

	var errs field.ErrorList
	if v.validator != nil {
		errs = append(errs, validation.ValidateCustomResource(nil, u, v.validator)...)
	}
	if v.structural != nil {
		errs = append(errs, objectmeta.Validate(ctx, nil, u, v.structural, false)...)
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, u)...)
		// The API server skips CEL rules once the object has a type or
		// required-field error: the rules may assume a well-formed object.
		if !hasBlockingErr(errs) {
			if cv := v.celValidator(); cv != nil {
				celErrs, _ := cv.Validate(ctx, nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
				errs = append(errs, celErrs...)
			}
		}
	}
	for _, e := range errs {
		problems = append(problems, fromFieldError(base, e))
	}
	sortProblems(problems)
	return problems
}

func hasBlockingErr(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// fromFieldError turns an API server field error into a problem. The schema
// validator repeats the path inside its detail ("spec.version in body must be
// of type string"); that repetition is cut, since the path is shown already.
func fromFieldError(base Problem, e *field.Error) Problem {
	p := base
	p.Path = e.Field
	rule := e.ErrorBody()
	if p.Path != "" {
		rule = strings.ReplaceAll(rule, p.Path+" in body ", "")
	}
	p.Rule = rule
	return p
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Rule < ps[j].Rule
	})
}

// DecodeObjects reads the objects of a multi-document YAML stream. Numbers
// become int64 where they are whole, as in the API server, so that an integer
// field is not mistaken for a float.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := SplitYAML(data)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for i, doc := range docs {
		var m map[string]any
		if err := utiljson.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if m == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// IsBuiltin says whether group is served by Kubernetes itself rather than by
// a CRD: the core group, the groups without a dot (apps, batch, policy…), and
// those under k8s.io that Kubernetes serves (not CRD-based ones like
// gateway.networking.k8s.io or the *.x-k8s.io groups).
func IsBuiltin(group string) bool {
	if group == "" || !strings.Contains(group, ".") {
		return true
	}
	return builtinGroups[group]
}

var builtinGroups = map[string]bool{
	"admissionregistration.k8s.io": true,
	"apiextensions.k8s.io":         true,
	"apiregistration.k8s.io":       true,
	"authentication.k8s.io":        true,
	"authorization.k8s.io":         true,
	"certificates.k8s.io":          true,
	"coordination.k8s.io":          true,
	"discovery.k8s.io":             true,
	"events.k8s.io":                true,
	"flowcontrol.apiserver.k8s.io": true,
	"internal.apiserver.k8s.io":    true,
	"networking.k8s.io":            true,
	"node.k8s.io":                  true,
	"rbac.authorization.k8s.io":    true,
	"resource.k8s.io":              true,
	"scheduling.k8s.io":            true,
	"storage.k8s.io":               true,
	"storagemigration.k8s.io":      true,
}
