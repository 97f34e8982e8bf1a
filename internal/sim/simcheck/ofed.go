package simcheck

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// The OFED driver in the GPU driver's maintenance (spec.ofed, planner's
// ofed.go), judged from the world's own record of the OFED pods the
// Network Operator started (sim.Step.OFEDPods) and from the nodes before
// each pass:
//
//   - a node that a live rollout with spec.ofed selects has its OFED pod
//     replaced only inside its maintenance: cordoned, and Installing after
//     its drain or RollingBack;
//   - a node in flight stays cordoned until its rollout lifts the cordon
//     (nobody else lifts it mid-way), and a rollout drains a node at most
//     once: one cordon and drain for both drivers;
//   - the GPU driver label flips to the target only on a node whose OFED
//     is through (the target, Ready, mofed.wait=false, upgrade-done), a
//     join aside;
//   - a release whose OFED target is its previous never releases a hold,
//     and a hold is released only into Installing or RollingBack.

// ofedSelfMove reports whether t is a write of the OFED step that leaves
// the node's phase as it was (a hold, a release, the driver label flipped
// or its pod restarted once OFED is through): no move of the phase graph.
func ofedSelfMove(s sim.Step, t planner.Transition) bool {
	return s.Rollout.Spec.OFED != nil && t.From == t.To && !t.Cordon && !t.Uncordon && !t.Failure && !t.Quarantine
}

// ofedRules checks one pass's OFED rules (see above).
func (c *Checker) ofedRules(s sim.Step) {
	for _, p := range s.OFEDPods {
		if len(p.Selected) == 0 {
			continue // no rollout holds it: the Network Operator's own
		}
		inMaintenance := p.Owner != "" && p.Unschedulable &&
			((p.Phase == v1alpha1.NodeInstalling && p.Drained) || p.Phase == v1alpha1.NodeRollingBack)
		if !inMaintenance {
			c.fail(s, "the OFED pod of %s (selected by %v) was replaced with %s outside its maintenance: owner %q, %s, cordoned=%t, drained=%t",
				p.Node, p.Selected, p.Version, p.Owner, p.Phase.OrPending(), p.Unschedulable, p.Drained)
		}
	}
	name := s.Rollout.Name
	h := c.run(name)
	before := map[string]*planner.Node{}
	for i := range s.Before {
		b := &s.Before[i]
		before[b.Name] = b
		if b.Owner == name && b.Phase.InFlight() && !b.Unschedulable {
			c.fail(s, "%s is %s in %s but schedulable: someone lifted its maintenance's cordon", b.Name, b.Phase, name)
		}
	}
	for _, t := range s.Result.Transitions {
		if t.To == v1alpha1.NodeDraining && t.From == v1alpha1.NodePending {
			h.drains[t.Node]++
			if h.drains[t.Node] > 1 {
				c.fail(s, "%s drained %s %d times", name, t.Node, h.drains[t.Node])
			}
		}
	}
	ofed := s.Rollout.Spec.OFED
	if ofed == nil {
		return
	}
	spec := &s.Rollout.Spec
	for _, t := range s.Result.Transitions {
		if t.ReleaseOFED {
			if !ofed.Moves() {
				c.fail(s, "%s released the OFED hold of %s, but the release keeps OFED %s", name, t.Node, ofed.TargetVersion)
			}
			if t.To != v1alpha1.NodeInstalling && t.To != v1alpha1.NodeRollingBack {
				c.fail(s, "%s released the OFED hold of %s into %s", name, t.Node, t.To)
			}
		}
		b := before[t.Node]
		// A join labels a new node (its GPU driver pod waits for its
		// OFED, as every new node's does) or what a node runs: no flip.
		// A rollback's label is the previous driver's, whatever the
		// versions are: only an install or a settle flips to the target.
		// A settle installs nothing (the node runs the target already): it
		// counts where the rollout moves OFED, as it then says the node's
		// OFED is through too.
		moves := ofed.Moves()
		install := t.To == v1alpha1.NodeInstalling || (moves && t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeDone)
		if b == nil || t.Join || !install || t.Driver != spec.TargetVersion || b.Labels[v1alpha1.LabelDriver] == spec.TargetVersion {
			continue
		}
		st := b.Labels[v1alpha1.LabelOFEDUpgradeState]
		// A rollout that moves OFED installs the GPU driver once the node
		// runs the target; one that keeps it, on a node whose OFED works,
		// whatever it runs.
		through := b.OFEDReady && !b.OFEDFailed && b.Labels[v1alpha1.LabelMOFEDWait] == "false"
		if moves {
			through = through && v1alpha1.OFEDMatches(b.OFEDVersion, ofed.TargetVersion) && (st == v1alpha1.OperatorStateDone || st == "")
		}
		if !through {
			c.fail(s, "%s flipped %s's driver label to %s with its OFED not through (pod %q, ready=%t, mofed.wait=%q, %q)",
				name, t.Node, t.Driver, b.OFEDVersion, b.OFEDReady, b.Labels[v1alpha1.LabelMOFEDWait], st)
		}
	}
}
