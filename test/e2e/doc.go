// Package e2e holds gpufleet's end-to-end suite: the whole story of a
// release, from "gpufleet render" to a promoted, a failed and an aborted
// release, played on the testbed.
//
// Two clusters (staging and prod), each its own etcd and kube-apiserver,
// real Flux source-controller and kustomize-controller, the real lifecycle
// controller (in-process controller-runtime manager) and simulated GPU nodes
// from the node agent (package nodesim). One real git server holds the fleet
// repository; the promotion commands commit in a real git work tree and the
// suite pushes each commit, as a person or CI would.
//
// What is simulated, and why: no kubelet, scheduler or controller-manager
// runs on the testbed, and helm-controller cannot be built here, so nothing
// would ever reconcile the HelmReleases that the operators step applies, and
// no GPU Operator would report its ClusterPolicy and NVIDIADrivers ready.
// The rendered operators and config Kustomizations wait for those objects,
// so the suite plays helm-controller and the GPU Operator for them: a
// goroutine per cluster (demo.PlayOperators) marks every HelmRelease Ready at
// its chart version and every NVIDIADriver (and one ClusterPolicy) state
// "ready", the way the gate's own test fixtures do. It also marks the serving
// stack's push Receiver Ready, as notification-controller (not built for the
// testbed) would. A small HTTP server on loopback serves the Helm repository
// index that source-controller fetches for the rendered HelmRepository. The
// GPU nodes are the node agent's. Everything else is the real thing: the
// operator and Flux CRDs, Flux applying the git server's commits, the
// lifecycle controller, the gate, and the gpufleet commands (run in-process).
//
// The suite needs the programs built by "make testbin" and the operator data
// in ../shared/operators; it skips under -short and when the operator CRDs are
// absent.
package e2e
