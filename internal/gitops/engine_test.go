package gitops

import (
	"slices"
	"testing"
)

// TestForNamesEveryEngine: each engine is found by its own name, "" is
// the default, and an unknown name is none.
func TestForNamesEveryEngine(t *testing.T) {
	for _, e := range Engines() {
		if got := For(e.Name()); got != e {
			t.Errorf("For(%q) = %v, want %v", e.Name(), got, e)
		}
	}
	if For("") != Default {
		t.Errorf("For(\"\") = %v, want the default %v", For(""), Default)
	}
	if e := For("jenkins"); e != nil {
		t.Errorf("For(\"jenkins\") = %v, want nil", e)
	}
	if got, want := Names(), []string{"flux", "argocd"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

// TestImplementationsPickTheEngines: each engine gets its own value, in
// Engines' order, and an unset engine the default's.
func TestImplementationsPickTheEngines(t *testing.T) {
	impl := Implementations("flux's", "argo's")
	want := map[Engine]string{Flux: "flux's", ArgoCD: "argo's", nil: "flux's"}
	for e, w := range want {
		if got := impl.For(e); got != w {
			t.Errorf("For(%v) = %q, want %q", e, got, w)
		}
	}
	seen := map[int]bool{}
	for i, e := range Engines() {
		if e.index() != i || seen[e.index()] {
			t.Errorf("engine %v has index %d at place %d of Engines", e, e.index(), i)
		}
		seen[e.index()] = true
	}
}
