package v1alpha1

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryGPUFleetNodeLabelHasAnOwner: each Label constant of this
// package in gpufleet.io/ is in ControllerNodeLabels (the admission policy
// guards it) or in PeopleNodeLabels, and in one of them only. A new label
// fails here until someone decides who may write it.
func TestEveryGPUFleetNodeLabelHasAnOwner(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var labels []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "zz_") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if !strings.HasPrefix(name.Name, "Label") || i >= len(spec.Values) {
					continue
				}
				lit, ok := spec.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if v := constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0)); strings.HasPrefix(v, GroupVersion.Group+"/") {
					labels = append(labels, v)
				}
			}
			return true
		})
	}
	if len(labels) < 5 {
		t.Fatalf("found only %v: the scan no longer sees the label constants", labels)
	}
	var guarded []string
	for _, l := range ControllerNodeLabels {
		guarded = append(guarded, l.Key)
	}
	for _, l := range labels {
		in := 0
		if slices.Contains(guarded, l) {
			in++
		}
		if slices.Contains(PeopleNodeLabels, l) {
			in++
		}
		if in != 1 {
			t.Errorf("label %s is in %d of ControllerNodeLabels and PeopleNodeLabels, want 1: decide who may write it", l, in)
		}
	}
	for _, l := range append(guarded, PeopleNodeLabels...) {
		if !slices.Contains(labels, l) {
			t.Errorf("%s is listed but is no Label constant of this package", l)
		}
	}
}
