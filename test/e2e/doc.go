// Package e2e holds gpufleet's end-to-end suite: the whole story of a
// release, from "gpufleet render" to a promoted, a failed and an aborted
// release, played on the testbed.
//
// Two clusters (staging and prod), each its own etcd and kube-apiserver,
// kube-controller-manager and kube-scheduler, real Flux source-controller and
// kustomize-controller, kwok as the kubelet of three simulated H100 nodes,
// the real NVIDIA GPU Operator (v25.3.4, out of cluster) and the real
// lifecycle controller (in-process controller-runtime manager). One real git
// server holds the fleet repository; the promotion commands commit in a real
// git work tree and the suite pushes each commit, as a person or CI would.
//
// Flux applies the GPU Operator chart pre-rendered ([charts] mode =
// "manifests"): the chart's real CRDs, RBAC, Deployment and ClusterPolicy,
// and gpufleet's NVIDIADrivers. The operator reconciles them: it labels the
// nodes, creates one driver DaemonSet per NVIDIADriver and the operand
// DaemonSets, and reports ClusterPolicy and NVIDIADrivers ready by itself.
// When the controller flips a drained node's gpufleet.io/driver label, the
// real DaemonSet controller deletes the old driver pod, the new
// NVIDIADriver's DaemonSet gets a pod onto the node through the real
// scheduler, and kwok runs it.
//
// What is simulated, and why: there are no GPUs, container runtime or
// kubelet. kwok plays the kubelet; the node agent (package nodesim) plays
// NFD and GFD labels, how long the driver install inside a driver pod takes
// and whether it succeeds (the drill's driver never does), and GPU faults.
// The serving stack's push Receiver is made Ready by the real
// notification-controller, which the story's testbed runs. The Network Operator's chart is applied, but its
// operator process is not run (kwok runs its pod as a placeholder).
// flux bootstrap is replaced by creating the root GitRepository and
// Kustomization. TestArgoCDStory runs staging on the real Argo CD
// (application-controller, repo-server, redis) instead of Flux: it
// applies the root Application `gpufleet bootstrap` prints, as a person
// would, and Argo CD applies the rest. The setup and the steps are package lab's, shared with the
// lab's demo (gpufleet-lab demo); world_test.go turns their errors into
// t.Fatal.
//
// The suite needs the programs built by "make testbin" (it fails, naming
// that command, without them) and the operator charts in ../shared/operators
// (it skips, saying so, without them); it skips under -short.
package e2e
