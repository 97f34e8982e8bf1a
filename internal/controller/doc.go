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
// Every node write carries the resourceVersion the pass read (a merge patch
// with an optimistic lock): a node belongs to at most one rollout (label
// gpufleet.io/rollout), and of two rollouts, or two controllers, that both
// saw a node free only the first write wins; the other gets a conflict and
// plans again. A deleted rollout's finalizer releases its nodes; a node
// naming a rollout that is gone without that is released before it is
// planned on. config/admission refuses, at the API server, moving a node
// from one rollout to another.
//
// Note: a node cordoned by someone else carries the annotation
// gpufleet.io/admin-cordoned from the first move any rollout makes on it,
// and is never uncordoned by the controller, not even when its rollout is
// deleted, because the admin had a reason the controller does not know.
package controller
