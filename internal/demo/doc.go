// Package demo plays gpufleet's story on a local testbed, for
// "gpufleet-lab demo" (package labcli): two clusters (staging and prod),
// each its own etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, Flux source-controller and kustomize-controller, kwok,
// the real GPU Operator, the lifecycle controller and simulated GPU nodes,
// plus one git server holding the fleet repository. The world is package
// lab's, shared with the end-to-end suite (test/e2e); the steps are the
// library calls behind the commands (render, start, approve, promote,
// gate, abort), each a real git commit pushed to the git server and
// applied by Flux.
//
// It is lab code: only the gpufleet-lab binary links it, never the
// gpufleet CLI.
package demo
