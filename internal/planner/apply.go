package planner

import "time"

// ApplyTo records on n what the actuator writes for t, made by the rollout
// called rollout: the node now belongs to it, the phase and since when, the
// failure mark, the cordon and the admin-cordon mark. Driver labels, drains
// and quarantine marks are the world's business (the API server, or the
// simulator) and are not modelled here. The controller and the simulator
// share it so they agree on what a transition leaves behind.
func (t Transition) ApplyTo(n *Node, rollout string, now time.Time) {
	if n.Owner != rollout {
		// A failure recorded by an earlier owner (one deleted without its
		// finalizer) counted against that rollout's budget, not this one's.
		n.Failed = false
	}
	n.Owner = rollout
	n.Phase = t.To
	n.Since = now
	if t.Failure {
		n.Failed = true
	}
	if t.RecordAdminCordon {
		n.AdminCordoned = true
	}
	if t.Cordon {
		n.Unschedulable = true
		n.AdminCordoned = false
	}
	if t.Uncordon {
		n.Unschedulable = false
	}
}

// Release is what deleting a rollout leaves on a node that belonged to it:
// the node belongs to nobody and keeps no progress. It is never uncordoned:
// a node in flight or quarantined keeps the rollout's cordon, as someone
// must look at it, and any other cordon is not the rollout's to lift. The
// admin-cordon mark stays while the node is cordoned, as the fact it
// records still holds. The controller's finalizer writes the same.
func Release(n *Node) {
	n.Owner, n.Phase, n.Since, n.Failed = "", "", time.Time{}, false
	if !n.Unschedulable {
		n.AdminCordoned = false
	}
}

// String renders the transition as one transcript line body.
func (t Transition) String() string {
	return t.Node + " " + string(t.From) + " → " + string(t.To) + ": " + t.Reason
}
