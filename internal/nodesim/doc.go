// Package nodesim simulates GPU nodes on a real API server that has no
// kubelet and no GPUs behind it: the testbed and "gpufleet demo" use it.
//
// For each simulated node it plays three parts:
//
//   - the kubelet: it creates the Node with GPU Feature Discovery labels for
//     its pool, keeps the Ready condition's heartbeat fresh, finishes the
//     deletion of pods bound to the node once their grace period ends (without
//     it, evicted pods stay Terminating for ever), and can mark those pods
//     Running and Ready;
//   - the GPU Operator's driver DaemonSet: when the node's gpufleet.io/driver
//     label changes, the old driver pod goes, a pod for the new version
//     appears and, after the install time, becomes Ready and the
//     nvidia.com/cuda.driver-version.* labels change to the new version;
//     a version marked bad never becomes Ready (its container shows
//     CrashLoopBackOff) and the labels keep the old version;
//   - a GPU node problem detector: on command it raises an XID or ECC error
//     as a node condition and a Kubernetes Event on the node, and clears it;
//     it also takes the node NotReady and back.
//
// State lives in the cluster (labels, pod annotations, conditions), so a
// restarted simulator carries on where the last one stopped; only faults
// raised on command are remembered in memory. Decisions that depend on time
// read the injected clock.
package nodesim
