// Package imageref reads container image references (registry/path:tag@digest)
// the one way every part of gpufleet needs them: the operators' and the
// drivers' versions are read from their images' tags, and the fleet file's
// gpufleet-controller image is checked, pinned by digest or not, before
// render writes it. The grammar is the
// distribution project's (github.com/distribution/reference), the one the
// container runtimes and registries parse with.
package imageref
