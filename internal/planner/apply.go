package planner

import "time"

// ApplyTo records on n what the actuator writes for t: the phase and since
// when, the failure mark, the cordon and the admin's earlier cordon. Driver
// labels, drains and quarantine marks are the world's business (the API
// server, or the simulator) and are not modelled here. The controller and
// the simulator share it so they agree on what a transition leaves behind.
func (t Transition) ApplyTo(n *Node, now time.Time) {
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
	}
	if t.Uncordon {
		n.Unschedulable = false
	}
}

// String renders the transition as one transcript line body.
func (t Transition) String() string {
	return t.Node + " " + string(t.From) + " → " + string(t.To) + ": " + t.Reason
}
