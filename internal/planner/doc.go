// Package planner decides, for one DriverRollout, what should happen next to
// each node. Plan takes a snapshot (the rollout, its nodes as observed, the
// health signals seen) and the current time, and returns the transitions to
// make, each with a reason sentence, plus the rollout status that results.
//
// It does no I/O and reads no clock: the controller, the simulator behind
// `gpufleet simulate` and the tests all drive the same function, so what the
// tests prove about it holds in the cluster. The actuator that performs a
// transition is the only place that touches the API server.
//
// Safety rules the planner keeps (and the randomized tests check):
//
//   - canary nodes go first and alone; nothing else starts until the canary
//     passed and spec.approval names the rollout (or the spec auto-approves
//     a clean canary);
//   - never more selected nodes unavailable than maxUnavailable, counting
//     every node cordoned by anyone, NotReady, quarantined, out for other
//     reasons, or in flight, so a fleet with broken nodes slows down
//     instead of breaking more;
//   - never more than parallelNodes in flight; a freed slot is refilled in
//     the same pass;
//   - nodes start only inside a maintenance window and outside a freeze; a
//     node in flight finishes;
//   - pause starts nothing; abort starts nothing and rolls back every node
//     that reached the new driver;
//   - once more nodes failed than the failure budget allows, nothing starts;
//   - a node cordoned by someone else is recorded as such by the first move
//     made on it (settled, started, rolled back, quarantined) and is never
//     uncordoned; a node is uncordoned only by the rollout that cordoned it;
//   - a node that belongs to another rollout (Node.Owner) is never moved and
//     counts as unavailable, and of two rollouts selecting a node that
//     belongs to none, the older goes first (Snapshot.Others); the status
//     names the other rollouts in the Overlap condition;
//   - a rollout whose nodes are all through but some failed ends
//     CompletedWithFailures, never Completed.
package planner
