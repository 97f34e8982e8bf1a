// Package netopplay plays, for the testbed, the one step of the NVIDIA
// Network Operator that the testbed cannot run for real: its
// state-ofed-driver, which turns the NicClusterPolicy's spec.ofedDriver
// into the OFED driver DaemonSet. The Network Operator cannot be built
// here (the Go module proxy does not serve it), so [OFEDDaemonSetPlayer]
// does that step in its place; the operator's OFED upgrade controller,
// the part whose behaviour gpufleet depends on, is the real
// k8s-operator-libs state machine (hack/testbin/gpu-operator/ofed-upgrade),
// and package nodesim plays the driver inside the pods.
//
// What it does, after the operator's manifests/state-ofed-driver and its
// pkg/state/state_ofed.go (read at v25.4.0 and v25.10.0):
//
//   - one DaemonSet per OS release and kernel among the nodes Node Feature
//     Discovery found a Mellanox NIC on (pci-15b3.present=true), named
//     mofed-<os><version>-<kernel hash>-ds, the same name for every OFED
//     version, updateStrategy OnDelete: a new version rewrites the
//     template in place and no pod moves until something deletes it;
//   - pods labelled nvidia.com/ofed-driver and app=<DaemonSet's app>,
//     selected by NFD's labels plus the policy's spec.nodeAffinity, with
//     the policy's tolerations and the operator's, one container
//     mofed-container of image <repository>/<image>:<version>-<os><os
//     version>-<arch>, and the operator's probes;
//   - the node label network.nvidia.com/operator.mofed.wait, as the
//     operator's NicClusterPolicy controller sets it: on every node with
//     an OFED pod, "false" when that pod's first container is Ready,
//     "true" otherwise.
//
// What it does not do: any other state of the policy (device plugins,
// IPAM, ...), precompiled or sha256 images, the init container and safe
// load, volumes, the policy's probe and env overrides, status on the
// policy, and the wait label of nodes with no OFED pod at all.
//
// Only tests and the testbed use it: the gpufleet binaries never play the
// operator.
package netopplay
