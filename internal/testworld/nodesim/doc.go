// Package nodesim simulates GPU nodes on a real cluster that has no GPUs
// behind it: the testbed, the lab ("gpufleet-lab demo") and the tests use it.
//
// kwok is the kubelet of the simulated nodes, the real controller-manager
// and scheduler run pods, and the GPU Operator's DaemonSets put the driver
// pods on the nodes (the real operator's in the end-to-end suite and the
// demo; in the controller's, the gate's and the other suites that do not
// run the operator, the DaemonSets its NVIDIADrivers would run, made by
// package nodesimtest), and the Network Operator's OFED DaemonSet its OFED
// pods (played by package netopplay). The simulator plays only what has no
// program behind it here:
//
//   - Node Feature Discovery and GPU Feature Discovery: nodes register with
//     the labels those would set (the NVIDIA PCI device, OS release and
//     kernel the operator keys its DaemonSets on, GPU product, count and
//     memory, and the installed driver's version);
//   - the driver install inside each of the operator's driver pods: how long
//     it takes, whether it ever succeeds (a version marked bad crash-loops),
//     and GFD's driver-version labels once the pod is Ready;
//   - the Network Operator's OFED driver inside its OFED pods on nodes with
//     managed NICs (NFD's Mellanox PCI label): an install time, bad versions
//     that crash-loop; and nvidia_peermem in GPU driver pods that have its
//     sidecar: their install waits for the node's OFED, and an OFED reload
//     under a running driver pod leaves peermem crash-looping until the pod
//     is recreated (ofed.go). Each OFED load and GPU driver install is an
//     Event on the node, read back by [InstallRecords];
//   - a GPU node problem detector: XID or ECC errors as node conditions and
//     Kubernetes Events; and a kubelet that stops (the node leaves kwok, its
//     Lease goes stale, and the real node lifecycle controller marks it
//     NotReady and taints it).
//
// State lives in the cluster (labels, annotations, pod statuses), so a
// restarted simulator carries on where the last one stopped; only faults
// raised on command are remembered in memory. Decisions that depend on time
// read the injected clock.
package nodesim
