// Package controller is the lifecycle controller behind gpufleet-controller:
// it rolls a DriverRollout's driver version across a cluster's GPU nodes.
//
// It is the planner's real world. Each pass rebuilds a [planner.Snapshot]
// from the cluster (snapshot.go): the DriverRollout, every node with the
// progress the controller recorded on it (labels and annotations under
// gpufleet.io/), the pods that decide whether a node is drained and whether
// its driver pod is Ready, and the health signals the plan names
// (health.go). [planner.Plan] decides; this package only acts on what it
// decided (actuate.go, drain.go), emits one Event per decision with the
// planner's reason, and patches the DriverRollout status when it changed.
//
// Nothing is kept in memory between passes: a controller restarted at any
// point rebuilds the same snapshot and carries on. A node's progress is
// written in the same patch that cordons it, flips its driver label or
// uncordons it, so the recorded phase never disagrees with what was done.
//
// Note: a node an admin had cordoned before the rollout touched it carries
// the annotation gpufleet.io/admin-cordoned and is never uncordoned by the
// controller, because the admin had a reason the controller does not know.
package controller
