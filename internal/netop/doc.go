// Package netop is gpufleet's one model of what the NVIDIA Network Operator
// does to a node's OFED driver, for the programs that play or read it: the
// simulator (package sim) plays a fleet's Network Operator with it, the
// node simulator (nodesim) and the testbed's DaemonSet player (netopplay)
// play the pods' side with it, and the controller reads a node's GPU driver
// as stale by the same rule.
//
// What it models, after k8s-operator-libs' upgrade state machine (driver
// name "ofed") as the Network Operator configures it from the
// NicClusterPolicy render writes (drain off, maxParallelUpgrades 0):
//
//   - Look: one look of the upgrade controller at a node, and whether it
//     replaces the node's OFED pod;
//   - Replaced: the states a node passes once its new pod came up or failed;
//   - WaitLabel: network.nvidia.com/operator.mofed.wait from the OFED pod;
//   - DriverStale: a GPU driver loaded before its node's OFED last became
//     Ready runs against an OFED it was not built for (nvidia_peermem).
//
// In the testbed the state machine itself is the real library
// (hack/testbin/gpu-operator/ofed-upgrade); this model is the simulator's
// stand-in for it, and its test says which of the library's states it
// passes over.
package netop
