// Package dra reads what NVIDIA's DRA driver for GPUs publishes about each
// node in its ResourceSlices (resource.k8s.io/v1): the GPUs' product and
// the driver version they run. On a node whose GPUs dynamic resource
// allocation hands out, these stand beside (or instead of) GPU Feature
// Discovery's node labels.
//
// `gpufleet init` places a node in a pool and reads its driver by it, and
// the gate checks the driver a node runs by it: both read the slices
// through this package, so they agree on what a node reports.
//
// It only interprets slices already read; reading them (and a cluster that
// does not serve resource.k8s.io/v1) is the caller's.
package dra
