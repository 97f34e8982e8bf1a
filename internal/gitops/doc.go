// Package gitops names the GitOps engines gpufleet renders for: the
// program in each cluster that applies the cluster's folder from the fleet
// repository (Flux, the default, and Argo CD).
//
// It is the one place that lists them. Engines is the list, For maps the
// fleet file's engine name to one, and Implementations is how a package
// with engine-specific code (render's objects, the gate's expectations,
// explain's links, the dashboard, bootstrap) holds one implementation per
// engine: its parameters are the engines, so a new engine adds one and
// every such package stops compiling until it implements the newcomer.
// None of them compares engine names. See docs/design/gitops-engines.md.
package gitops
