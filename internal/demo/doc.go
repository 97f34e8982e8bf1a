// Package demo plays gpufleet's story on a local testbed, for
// "gpufleet demo": two clusters (staging and prod), each its own etcd,
// kube-apiserver, Flux source-controller and kustomize-controller, the
// lifecycle controller and simulated GPU nodes, plus one git server holding
// the fleet repository. The steps are the library calls behind the commands
// (render, start, approve, promote, gate, abort), each a real git commit
// pushed to the git server and applied by Flux.
//
// As in the end-to-end suite (test/e2e), helm-controller and the GPU
// Operator are played by a goroutine per cluster, because neither runs on
// the testbed: HelmReleases are marked Ready at their chart version and
// NVIDIADrivers and the ClusterPolicy report state ready. A loopback Helm
// repository serves the index source-controller fetches.
package demo
