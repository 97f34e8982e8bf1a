// Package testbed starts real Kubernetes control planes, real Flux controllers
// and a real git server for tests and for the lab ("gpufleet-lab demo").
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
// [Options.ArgoCD] names the clusters that run the real Argo CD
// (application-controller, repo-server and a redis) instead of Flux
// ([Cluster.WaitSynced] waits for an Application).
//
// With [Options.Kube] each cluster also runs kube-controller-manager (the
// controllers in [KubeControllers]) and kube-scheduler, and with
// [Options.Kwok] kwok as the kubelet of the nodes labelled
// [KwokNodeLabel]=fake (heartbeats and Leases, pod phases, pod deletion),
// plus a CPU-only [SystemNode]. [Cluster.StartGPUOperator] runs the real
// NVIDIA GPU Operator for a cluster, out of cluster, configured by the
// Deployment its chart installed and chrooted into a private root that holds
// its state manifests. [Cluster.StartNetworkOperator] runs the NVIDIA
// Network Operator as the testbed plays it, since it cannot be built here:
// its OFED upgrade controller is the real k8s-operator-libs state machine,
// configured as the operator configures it, as a subprocess; the step that
// turns the NicClusterPolicy into the OFED DaemonSet is played in process
// by package netopplay.
//
// What is not real: no kubelet, container runtime or GPU. kwok plays the
// kubelet; package nodesim plays what is GPU-specific (NFD and GFD labels,
// the driver install inside the operator's driver pods, the OFED driver
// inside the Network Operator's OFED pods, nvidia_peermem, XID/ECC faults),
// and needs Kwok (and Kube for the driver pods). Without them nothing
// creates pods or finishes their deletion, and no simulated node is Ready.
//
// The programs come from "make testbin" (hack/testbin.sh), which builds them
// once into a per-user cache and copies them into bin/testbin. [FindBinaries]
// looks for them in $GPUFLEET_TESTBIN, else in bin/testbin of the module root.
//
// Tests use [New], which skips under -short, fails with a message naming
// "make testbin" when the programs are missing, and stops everything (Flux
// before the control planes) when the test ends, passed or failed.
package testbed
