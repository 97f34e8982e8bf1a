package planner

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// ofedStep is the OFED driver's part of a node's maintenance (spec.ofed,
// gpufleet actuator only). Every selected node is held with the Network
// Operator's skip label; Installing releases the hold where the node's OFED
// is not the target, and flips the GPU driver once the new OFED is Ready.
// Why, and the rollback: docs/design/ofed-maintenance.md.
//
// The phase handlers call it only at their boundaries: hold (each pass),
// startWait (start), pending (a node on the target driver), enter
// (Draining → Installing), failure and install (Installing), keepHeld (a
// node leaving a phase), back and rollbackWhy (RollingBack). Its zero value
// is a rollout without spec.ofed: every boundary lets the node through.
type ofedStep struct {
	p *planner
	// spec is the rollout's spec.ofed; nil when it holds no OFED.
	spec *v1alpha1.OFEDSpec
	// moves: the rollout moves the OFED driver (v1alpha1.OFEDSpec.Moves).
	moves bool
	// policy is the OFED version the NicClusterPolicy names (the
	// snapshot's OFEDPolicy); empty when unknown.
	policy string
}

// newOFEDStep returns the OFED step of p's rollout.
func newOFEDStep(p *planner, policy string) ofedStep {
	if p.spec.OFED == nil || p.operator() {
		return ofedStep{p: p}
	}
	return ofedStep{p: p, spec: p.spec.OFED, moves: p.spec.OFED.Moves(), policy: policy}
}

// on reports whether node w has an OFED step: the rollout holds OFED and
// the node runs its OFED driver (spec.ofed.nodeSelectors).
func (o ofedStep) on(w *work) bool { return o.spec != nil && w.nics }

// selects returns whether a node, by its labels, runs the rollout's OFED
// driver (spec.ofed.nodeSelectors: any matches; none, every node).
func (o ofedStep) selects() func(labels.Set) bool {
	if o.spec == nil {
		return func(labels.Set) bool { return false }
	}
	if len(o.spec.NodeSelectors) == 0 {
		return func(labels.Set) bool { return true }
	}
	sels := o.p.selectors(o.spec.NodeSelectors, "ofed.nodeSelectors")
	return func(l labels.Set) bool { return matchesAny(sels, l) }
}

// hold puts the skip label on every selected node whose OFED is not in its
// maintenance's hands (Installing or RollingBack), so the Network Operator
// replaces no OFED pod outside a maintenance. Holds go first in a pass: a
// node's first write holds it before anything could release it.
func (o ofedStep) hold() {
	if o.spec == nil {
		return
	}
	p := o.p
	for i := range p.nodes {
		w := &p.nodes[i]
		if !w.nics || w.elsewhere != "" || w.phase == v1alpha1.NodeInstalling || w.phase == v1alpha1.NodeRollingBack || o.held(w) {
			continue
		}
		// A hold changes no phase: the rest of the pass (maintenance
		// domains among it) sees the node as the pass found it.
		moved := w.moved
		p.move(w, w.phase, "held with the OFED skip label: its OFED is replaced only inside its maintenance", func(t *Transition) { t.HoldOFED = true })
		w.moved = moved
	}
}

// keepHeld reports whether a transition of node w out of its maintenance's
// OFED hands puts the hold back on.
func (o ofedStep) keepHeld(w *work) bool { return o.on(w) && !o.held(w) }

// startWait says why no node starts while the NicClusterPolicy names
// another OFED version than the rollout's target (a node released now would
// not get it); empty when it names the target or is not known.
func (o ofedStep) startWait() string {
	if !o.moves || o.policy == "" || o.policy == o.spec.TargetVersion {
		return ""
	}
	return fmt.Sprintf("waiting: the NicClusterPolicy names OFED %s, not the rollout's %s (a node released now would not get it)", o.policy, o.spec.TargetVersion)
}

// pending reports whether node w, on the target GPU driver, still needs a
// maintenance for its OFED: its OFED to replace, or its driver pod, loaded
// before its OFED, to restart.
func (o ofedStep) pending(w *work) bool {
	return o.moves && w.nics && !o.runs(w, o.spec.TargetVersion) || o.stale(w)
}

// settled is the reason of a node found on the target GPU driver, with its
// OFED where the rollout moves it.
func (o ofedStep) settled(w *work, target string) string {
	if o.moves && w.nics {
		return fmt.Sprintf("already on driver %s and OFED %s: nothing to install", target, o.spec.TargetVersion)
	}
	return fmt.Sprintf("already on driver %s: nothing to install", target)
}

// enter moves node w, drained, to Installing where its OFED step comes
// first, and reports whether it did; if not, the GPU driver is installed
// at once.
func (o ofedStep) enter(w *work) bool {
	p := o.p
	switch {
	case o.replaces(w):
		// The GPU driver label flips once the OFED is through (install),
		// so a new GPU driver never builds against the OFED about to be
		// replaced.
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("drained in %s; OFED hold released: the Network Operator replaces OFED %s first, then driver %s",
			p.elapsed(w), o.spec.TargetVersion, p.spec.TargetVersion), func(t *Transition) { t.ReleaseOFED = true })
		return true
	case !o.through(w):
		// Its OFED pod is the target's already but not through: the GPU
		// driver waits for it all the same, or the node fails in its
		// OFED step.
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("drained in %s; OFED %s not through yet (%s): driver %s once it is",
			p.elapsed(w), versionOr(o.bringsTo(w)), o.progress(w), p.spec.TargetVersion), nil)
		return true
	}
	return false
}

// failure says why node w, Installing, fails in its OFED step, and reports
// whether the step decides the node's failure in this pass (its OFED not
// through, or its driver pod about to be restarted: what that pod does
// until then, a crash-looping peermem, is no failure).
func (o ofedStep) failure(w *work) (why string, decided bool) {
	switch {
	case !o.through(w):
	case o.stale(w):
		return "", true
	default:
		return "", false
	}
	p, target := o.p, o.spec.TargetVersion
	if !o.moves {
		switch {
		case w.n.OFEDFailed:
			return fmt.Sprintf("its OFED %s cannot come up", versionOr(w.n.OFEDVersion)), true
		case p.overdue(w, p.set.InstallTimeout):
			return fmt.Sprintf("its OFED not Ready within %s (%s)", short(p.set.InstallTimeout), o.progress(w)), true
		}
		return "", true
	}
	switch {
	case v1alpha1.OFEDMatches(w.n.OFEDVersion, target) && w.n.OFEDFailed:
		return fmt.Sprintf("OFED %s failed to install", target), true
	case o.upgradeState(w) == v1alpha1.OperatorStateFailed:
		return fmt.Sprintf("the Network Operator marked the OFED upgrade to %s failed", target), true
	case p.overdue(w, p.set.InstallTimeout):
		return fmt.Sprintf("OFED %s not through within %s (%s)", target, short(p.set.InstallTimeout), o.progress(w)), true
	}
	return "", true
}

// install moves node w, Installing, through its OFED step; it reports
// whether the step is over (then installing goes on as for the GPU driver
// alone).
func (o ofedStep) install(w *work) bool {
	if !o.on(w) {
		return true
	}
	p := o.p
	if !o.through(w) {
		if o.held(w) && o.replaces(w) {
			// Someone put the hold back: the Network Operator would
			// never replace the pod.
			p.move(w, w.phase, fmt.Sprintf("OFED hold released again: OFED %s is not replaced while held", o.spec.TargetVersion), func(t *Transition) { t.ReleaseOFED = true })
		}
		return false
	}
	done := fmt.Sprintf("OFED %s %s after %s", versionOr(o.bringsTo(w)), o.doneWord(), p.elapsed(w))
	switch {
	case w.n.Labels[v1alpha1.LabelDriver] != p.spec.TargetVersion:
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("%s; installing driver %s", done, p.spec.TargetVersion), func(t *Transition) {
			t.Driver = p.spec.TargetVersion
			t.HoldOFED = !o.held(w)
		})
		return false
	case o.stale(w):
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("%s; restarting the driver %s pod so nvidia_peermem loads against it", done, p.spec.TargetVersion), func(t *Transition) {
			t.RestartDriver = true
			t.HoldOFED = !o.held(w)
		})
		return false
	}
	return true
}

// back reports whether node w, rolling back, has the previous OFED (Ready)
// and a GPU driver pod started after it. Where not, fix (nil when there is
// nothing to do but wait) releases the node's hold, so that the Network
// Operator puts the previous OFED back once the NicClusterPolicy names it,
// or restarts a stale driver pod.
func (o ofedStep) back(w *work) (back bool, fix func()) {
	if !o.on(w) {
		return true, nil
	}
	if !o.moves {
		// Its OFED was never released: only a driver pod loaded before
		// it (an OFED pod restarted by a reboot) is restarted.
		if o.stale(w) {
			return false, o.restart(w, o.spec.TargetVersion)
		}
		return true, nil
	}
	prev := o.spec.PreviousVersion
	// The NicClusterPolicy names the previous version again (the release
	// reverted, as render writes it under abort): every node's OFED goes
	// back. Where it is not known, an abort says the same.
	reverted := o.policy == prev || o.policy == "" && o.p.spec.Abort
	switch {
	case o.runs(w, o.spec.TargetVersion) && !v1alpha1.OFEDMatches(w.n.OFEDVersion, prev) && !reverted:
		// Its new OFED works (the GPU driver failed, or the soak): the
		// GPU driver goes back alone, and the node keeps the target OFED
		// with the previous GPU driver, built against it, until its next
		// maintenance. Held, as it cannot go back while the policy
		// names the target.
		if o.stale(w) {
			return false, o.restart(w, o.spec.TargetVersion+" kept")
		}
		return true, nil
	case !v1alpha1.OFEDMatches(w.n.OFEDVersion, prev):
		if !o.held(w) {
			return false, nil
		}
		return false, func() {
			o.p.move(w, w.phase, fmt.Sprintf("OFED hold released: OFED goes back to %s once the NicClusterPolicy names it again", prev), func(t *Transition) { t.ReleaseOFED = true })
		}
	case !o.runs(w, prev):
		return false, nil
	case o.stale(w):
		return false, o.restart(w, prev)
	}
	return true, nil
}

// rollbackWhy says, for a rollback that timed out, what of OFED kept it.
func (o ofedStep) rollbackWhy(w *work) string {
	if !o.moves || !w.nics || o.runs(w, o.spec.PreviousVersion) {
		return ""
	}
	return fmt.Sprintf("; OFED is not back on %s (%s): the NicClusterPolicy has one OFED version for the cluster, and a node's OFED goes back only once it names %s again",
		o.spec.PreviousVersion, o.progress(w), o.spec.PreviousVersion)
}

// restart restarts node w's GPU driver pod, rolling back, where it was
// loaded before the node's OFED (of version ofed) became Ready.
func (o ofedStep) restart(w *work, ofed string) func() {
	return func() {
		o.p.move(w, w.phase, fmt.Sprintf("OFED %s Ready; restarting the driver %s pod so nvidia_peermem loads against it", ofed, o.p.spec.PreviousVersion), func(t *Transition) {
			t.RestartDriver = true
		})
	}
}

// through reports whether node w's OFED step is over: its OFED runs the
// target (or the rollout moves no OFED: it works), and the Network Operator
// is done with the node (upgrade-done; no state at all where its upgrade
// controller does not run, as a pod on the target then proves enough).
func (o ofedStep) through(w *work) bool {
	if !o.on(w) {
		return true
	}
	if !o.moves {
		// Its OFED stays what it is; the GPU driver, built against it
		// with RDMA and waiting for it, is installed on a working one.
		return o.works(w)
	}
	st := o.upgradeState(w)
	return o.runs(w, o.spec.TargetVersion) && (st == v1alpha1.OperatorStateDone || st == "")
}

// replaces reports whether node w's OFED pod is not the target's.
func (o ofedStep) replaces(w *work) bool {
	return o.moves && w.nics && !v1alpha1.OFEDMatches(w.n.OFEDVersion, o.spec.TargetVersion)
}

// stale reports whether node w's GPU driver pod must be restarted because
// its OFED was replaced under it (with GPUDirect RDMA only: without it the
// GPU driver does not build against OFED).
func (o ofedStep) stale(w *work) bool {
	return o.on(w) && o.spec.Peermem && w.n.DriverStale
}

// bringsTo is the OFED version node w's maintenance brings it to: the
// target where the rollout moves OFED, else the one it runs.
func (o ofedStep) bringsTo(w *work) string {
	if o.moves {
		return o.spec.TargetVersion
	}
	return w.n.OFEDVersion
}

// doneWord says how a node's OFED step ended: replaced (the Network
// Operator's upgrade-done) where the rollout moves OFED, else Ready.
func (o ofedStep) doneWord() string {
	if o.moves {
		return "Ready (upgrade-done)"
	}
	return "Ready"
}

// progress describes where node w's OFED upgrade stands.
func (o ofedStep) progress(w *work) string {
	var parts []string
	v := w.n.OFEDVersion
	switch {
	case v == "":
		parts = append(parts, "no OFED pod")
	case w.n.OFEDReady:
		parts = append(parts, "OFED pod "+v+" Ready")
	default:
		parts = append(parts, "OFED pod "+v+" not Ready")
	}
	parts = append(parts, "mofed.wait="+versionOr(w.n.Labels[v1alpha1.LabelMOFEDWait]))
	parts = append(parts, operatorStateOr(o.upgradeState(w)))
	return strings.Join(parts, ", ")
}

// What the node says of its OFED: the skip label, the Network Operator's
// upgrade state, the pod working (Ready, and mofed.wait=false, which the
// RDMA device plugins and a GPU driver with RDMA wait for), and working on
// a version.

func (ofedStep) held(w *work) bool { return w.n.Labels[v1alpha1.LabelOFEDUpgradeSkip] == "true" }

func (ofedStep) upgradeState(w *work) string { return w.n.Labels[v1alpha1.LabelOFEDUpgradeState] }

func (ofedStep) works(w *work) bool {
	return w.n.OFEDReady && !w.n.OFEDFailed && w.n.Labels[v1alpha1.LabelMOFEDWait] == "false"
}

func (o ofedStep) runs(w *work, version string) bool {
	return v1alpha1.OFEDMatches(w.n.OFEDVersion, version) && o.works(w)
}
