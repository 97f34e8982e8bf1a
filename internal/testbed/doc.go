// Package testbed starts real Kubernetes control planes, real Flux controllers
// and a real git server for tests and for "gpufleet demo".
//
// Each named cluster is its own etcd and kube-apiserver (controller-runtime's
// envtest), so CRD schemas, admission and the Eviction API behave as they do
// in production. With [Options.Flux], each cluster also runs Flux's
// source-controller and kustomize-controller as subprocesses, pointed at the
// cluster through a kubeconfig file, so a folder committed to the [GitServer]
// is applied and pruned by the real kustomize-controller. [Options.FluxImage]
// adds image-reflector-controller and image-automation-controller, and
// [Options.Notification] notification-controller (receivers at
// [Flux.ReceiverURL]; the other controllers send it their events). A
// [Registry] is a real OCI registry in the test process for them to scan,
// and [GitRepo.ReadBranch] reads back what image automation pushed.
//
// What is not real: no kubelet, scheduler or controller-manager runs. Pods bound
// to a node stay Terminating after deletion and nothing creates ReplicaSets or
// DaemonSet pods. Package nodesim plays the kubelet and the GPU driver for the
// nodes a test needs.
//
// The programs come from "make testbin" (hack/testbin.sh), which builds them
// once into a per-user cache and copies them into bin/testbin. [FindBinaries]
// looks for them in $GPUFLEET_TESTBIN, else in bin/testbin of the module root.
//
// Tests use [New], which skips under -short, fails with a message naming
// "make testbin" when the programs are missing, and stops everything (Flux
// before the control planes) when the test ends, passed or failed.
package testbed
