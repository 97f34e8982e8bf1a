// Package render turns a validated fleet into the files Flux applies: for
// each cluster, clusters/<cluster>/ with three Flux Kustomizations chained by
// dependsOn (operators → config → lifecycle) and the objects of each step —
// the operators as HelmReleases or pre-rendered manifests (manifests mode),
// one NVIDIADriver per pool and driver version, the DriverRollout — and the
// serving stack: infrastructure/ (controllers, configs, the push webhook,
// image automation per environment), apps/base and apps/<env> overlays
// (services placed on the clusters whose GPUs fit them), per-cluster stack
// Kustomizations, and .sops.yaml.
//
// Rendering is pure and deterministic: Render returns every file's bytes in
// memory, the same fleet giving the same bytes. Write then replaces the
// previous output as one step, removing files that an earlier render wrote
// and this one no longer does, and never touching files it did not write.
// DriverRollout builds the one rollout object render writes for a cluster,
// which simulate rehearses and the gate expects.
package render
