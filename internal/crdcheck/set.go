package crdcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Set is the CRDs of one operator release, ready to validate objects against.
// It is safe for concurrent use.
type Set struct {
	crds     []*apiextensionsv1.CustomResourceDefinition
	versions map[schema.GroupVersionKind]*crdVersion
	kinds    map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
}

// crdVersion is everything needed to validate objects of one served CRD version.
type crdVersion struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	name       string
	structural *structuralschema.Structural
	validator  validation.SchemaValidator

	// CEL programs are compiled on first use: compiling every rule of a large
	// CRD such as ClusterPolicy costs more than validating a few objects.
	celOnce sync.Once
	cel     *cel.Validator
}

// NewSet prepares crds for validation. Two CRDs of the same group and kind are
// an error, as the API server would keep only one of them.
func NewSet(crds ...*apiextensionsv1.CustomResourceDefinition) (*Set, error) {
	s := &Set{
		versions: map[schema.GroupVersionKind]*crdVersion{},
		kinds:    map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{},
	}
	var errs []error
	for _, crd := range crds {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		if _, dup := s.kinds[gk]; dup {
			errs = append(errs, fmt.Errorf("crd %s: kind %s defined twice", crd.Name, gk))
			continue
		}
		if err := s.add(crd); err != nil {
			errs = append(errs, fmt.Errorf("crd %s: %w", crd.Name, err))
			continue
		}
		s.kinds[gk] = crd
		s.crds = append(s.crds, crd)
	}
	sort.Slice(s.crds, func(i, j int) bool { return s.crds[i].Name < s.crds[j].Name })
	return s, errors.Join(errs...)
}

func (s *Set) add(crd *apiextensionsv1.CustomResourceDefinition) error {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		cv := &crdVersion{crd: crd, name: v.Name}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return fmt.Errorf("version %s: convert schema: %w", v.Name, err)
			}
			st, err := structuralschema.NewStructural(internal)
			if err != nil {
				return fmt.Errorf("version %s: schema is not structural: %w", v.Name, err)
			}
			// The API server refuses a CRD whose schema is not structural, so
			// such a CRD would never get as far as validating objects.
			if errs := structuralschema.ValidateStructural(nil, st); len(errs) > 0 {
				return fmt.Errorf("version %s: schema is not structural: %w", v.Name, errs.ToAggregate())
			}
			val, _, err := validation.NewSchemaValidator(internal)
			if err != nil {
				return fmt.Errorf("version %s: schema validator: %w", v.Name, err)
			}
			cv.structural, cv.validator = st, val
		}
		s.versions[gvk] = cv
	}
	return nil
}

// CRDs returns the set's CRDs sorted by name.
func (s *Set) CRDs() []*apiextensionsv1.CustomResourceDefinition { return s.crds }

// HasKind says whether the set defines gk in any version.
func (s *Set) HasKind(gk schema.GroupKind) bool {
	_, ok := s.kinds[gk]
	return ok
}

// celValidator returns the version's compiled CEL rules, or nil when it has none.
func (v *crdVersion) celValidator() *cel.Validator {
	v.celOnce.Do(func() {
		if v.structural != nil {
			v.cel = cel.NewValidator(v.structural, true, celconfig.PerCallLimit)
		}
	})
	return v.cel
}

// ParseCRDs reads every CustomResourceDefinition (apiextensions.k8s.io/v1) in a
// multi-document YAML stream and ignores the other documents.
func ParseCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := SplitYAML(data)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := utiljson.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("read document: %w", err)
		}
		if head.Kind != "CustomResourceDefinition" || head.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return nil, fmt.Errorf("read crd: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// SplitYAML splits a multi-document YAML stream into JSON documents, leaving
// out empty ones (a template that rendered nothing, a lone comment).
func SplitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split yaml: %w", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("parse yaml: %w", err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		out = append(out, js)
	}
}
