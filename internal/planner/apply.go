package planner

import (
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Next returns what transition t, made by the rollout called rollout at
// now, leaves on a node in state s that is cordoned or not
// (unschedulable): the node now belongs to the rollout, the phase and since
// when, the failure mark, the cordon and the admin-cordon mark. It is the
// one rule of what a transition writes: the planner's own running view
// (move), ApplyTo (the simulator, the tests) and the controller (which
// writes the result with v1alpha1.NodeState.Encode) all apply it. Driver
// labels, drains and quarantine marks are the world's business and are not
// part of it.
func (t Transition) Next(s v1alpha1.NodeState, unschedulable bool, rollout string, now time.Time) (v1alpha1.NodeState, bool) {
	if s.Rollout != rollout {
		// A failure recorded by an earlier owner (one deleted without its
		// finalizer) counted against that rollout's budget, not this one's.
		// The admin-cordon mark stays: it is a fact about the node, and
		// dropping it would let this rollout lift a cordon not its own.
		s.Failed = false
	}
	if !(t.Plugin == PluginPause && t.From == t.To && s.Phase == t.To && s.Rollout == rollout) {
		// A DRA node's plugin stopped in the middle of its drain
		// keeps the drain's start: the drain timeout bounds every
		// step of it (dra.go).
		s.Since = now
	}
	s.Rollout = rollout
	s.Phase = t.To
	if t.Failure {
		s.Failed = true
	}
	if t.RecordAdminCordon {
		s.AdminCordoned = true
	}
	if t.Cordon {
		// The node was schedulable: whoever cordoned it before lifted that
		// cordon, and this one is the rollout's own.
		unschedulable = true
		s.AdminCordoned = false
	}
	if t.Uncordon {
		unschedulable = false
	}
	return s, unschedulable
}

// ApplyTo records on n what the actuator writes for t, made by the rollout
// called rollout (see Next).
func (t Transition) ApplyTo(n *Node, rollout string, now time.Time) {
	s, unschedulable := t.Next(n.State(), n.Unschedulable, rollout, now)
	n.SetState(s)
	n.Unschedulable = unschedulable
}

// Released is what deleting a rollout leaves of state s on a node that
// belonged to it, cordoned or not: the node belongs to nobody and keeps no
// progress. It is never uncordoned: a node in flight or quarantined keeps
// the rollout's cordon, as someone must look at it, and any other cordon is
// not the rollout's to lift. The admin-cordon mark stays while the node is
// cordoned, as the fact it records still holds. The controller's finalizer
// writes the same.
func Released(s v1alpha1.NodeState, unschedulable bool) v1alpha1.NodeState {
	return v1alpha1.NodeState{AdminCordoned: s.AdminCordoned && unschedulable}
}

// Release applies Released to n.
func Release(n *Node) { n.SetState(Released(n.State(), n.Unschedulable)) }

// State is the progress recorded on n, as the node's labels and
// annotations hold it (v1alpha1.NodeState).
func (n *Node) State() v1alpha1.NodeState {
	return v1alpha1.NodeState{Rollout: n.Owner, Phase: n.Phase, Since: n.Since, Failed: n.Failed, AdminCordoned: n.AdminCordoned}
}

// SetState records s on n.
func (n *Node) SetState(s v1alpha1.NodeState) {
	n.Owner, n.Phase, n.Since, n.Failed, n.AdminCordoned = s.Rollout, s.Phase, s.Since, s.Failed, s.AdminCordoned
}

// String renders the transition as one transcript line body.
func (t Transition) String() string {
	return t.Node + " " + string(t.From) + " → " + string(t.To) + ": " + t.Reason
}
