// Package render turns a validated fleet into the files Flux applies: for
// each cluster, clusters/<cluster>/ with three Flux Kustomizations chained by
// dependsOn (operators → config → lifecycle) and the objects of each step.
//
// Rendering is pure and deterministic: Render returns every file's bytes in
// memory, the same fleet giving the same bytes. Write then replaces the
// previous output as one step, removing files that an earlier render wrote
// and this one no longer does, and never touching files it did not write.
package render
