package gitops

// Engine is a GitOps engine.
type Engine interface {
	// Name is the engine as the fleet file names it ([gitops] engine).
	Name() string
	// Title is the engine as people name it ("Argo CD").
	Title() string
	// index is the engine's place in Engines: which of an
	// Implementations' values is its own.
	index() int
}

// The engines. Comparable: two clusters are on the same engine when their
// Engines are equal.
var (
	// Flux applies the cluster's folder with kustomize-controller's
	// Kustomizations, one per step, chained by dependsOn (see flux.go).
	Flux Engine = flux{}
	// ArgoCD applies it with Applications, the steps ordered by sync
	// waves inside one (see argocd.go).
	ArgoCD Engine = argoCD{}
)

// Default is the engine of a cluster the fleet file gives none.
var Default = Flux

// Engines are every engine, the default first, in the order of
// Implementations' parameters.
func Engines() []Engine { return []Engine{Flux, ArgoCD} }

// Names are the engines' names, in Engines' order.
func Names() []string {
	var out []string
	for _, e := range Engines() {
		out = append(out, e.Name())
	}
	return out
}

// For is the engine the fleet file names name: Default for "", nil for a
// name that is no engine's. It is the one place that maps a name to an
// engine.
func For(name string) Engine {
	if name == "" {
		return Default
	}
	for _, e := range Engines() {
		if e.Name() == name {
			return e
		}
	}
	return nil
}

// Or is e, or Default where e is nil (an Engine field nobody set).
func Or(e Engine) Engine {
	if e == nil {
		return Default
	}
	return e
}

// Impl holds a package's implementation of something per engine.
type Impl[T any] struct{ byEngine []T }

// Implementations holds one implementation of T per engine, one
// parameter each, in Engines' order. A third engine adds a parameter:
// every package with engine-specific code then fails to compile until it
// gives the new engine its implementation, rather than falling back to
// another engine's at run time.
func Implementations[T any](flux, argoCD T) Impl[T] {
	return Impl[T]{byEngine: []T{flux, argoCD}}
}

// For is e's implementation (Default's where e is nil).
func (i Impl[T]) For(e Engine) T { return i.byEngine[Or(e).index()] }
