package planner

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// The OFED driver in the GPU driver's maintenance (spec.ofed, gpufleet
// actuator only): every selected node is held with the Network Operator's
// skip label; Installing releases the hold where the node's OFED is not
// the target, and flips the GPU driver once the new OFED is Ready. Why, and
// the rollback: docs/design/ofed-maintenance.md.

// ofed reports whether the rollout holds its nodes' OFED (spec.ofed).
func (p *planner) ofed() bool { return p.spec.OFED != nil && !p.operator() }

// movesOFED reports whether the rollout, on the gpufleet actuator, moves
// the OFED driver (v1alpha1.OFEDSpec.Moves).
func (p *planner) movesOFED() bool { return p.ofed() && p.spec.OFED.Moves() }

// ofedHeld reports whether the node carries the OFED skip label.
func ofedHeld(w *work) bool { return w.n.Labels[v1alpha1.LabelOFEDUpgradeSkip] == "true" }

// ofedWorks reports whether the node's OFED pod is Ready and the node says
// so (mofed.wait=false, which the RDMA device plugins and a GPU driver with
// RDMA wait for), whatever version it runs.
func ofedWorks(w *work) bool {
	return w.n.OFEDReady && !w.n.OFEDFailed && w.n.Labels[v1alpha1.LabelMOFEDWait] == "false"
}

// ofedOn reports whether the node's OFED pod runs version and works.
func ofedOn(w *work, version string) bool {
	return v1alpha1.OFEDMatches(w.n.OFEDVersion, version) && ofedWorks(w)
}

// ofedState is the Network Operator's OFED upgrade state of the node.
func ofedState(w *work) string { return w.n.Labels[v1alpha1.LabelOFEDUpgradeState] }

// ofedThrough reports whether node w's OFED step is over: its OFED runs the
// target (or the rollout moves no OFED), and the Network Operator is done
// with the node (upgrade-done; no state at all where its upgrade
// controller does not run, as a pod on the target then proves enough).
func (p *planner) ofedThrough(w *work) bool {
	if !p.ofed() || !w.nics {
		return true
	}
	if !p.movesOFED() {
		// Its OFED stays what it is; the GPU driver, built against it
		// with RDMA and waiting for it, is installed on a working one.
		return ofedWorks(w)
	}
	st := ofedState(w)
	return ofedOn(w, p.spec.OFED.TargetVersion) && (st == v1alpha1.OperatorStateDone || st == "")
}

// needsOFED reports whether node w's OFED pod is not the target's.
func (p *planner) needsOFED(w *work) bool {
	return p.movesOFED() && w.nics && !v1alpha1.OFEDMatches(w.n.OFEDVersion, p.spec.OFED.TargetVersion)
}

// staleDriver reports whether node w's GPU driver pod must be restarted
// because its OFED was replaced under it (with GPUDirect RDMA only: without
// it the GPU driver does not build against OFED).
func (p *planner) staleDriver(w *work) bool {
	return p.ofed() && w.nics && p.spec.OFED.Peermem && w.n.DriverStale
}

// holdOFED puts the skip label on every selected node of this rollout
// whose OFED is not in its maintenance's hands (Installing or RollingBack),
// so the Network Operator replaces no OFED pod outside a maintenance.
// Holds go first in a pass, as on the gpu-operator path: a node's first
// write holds it before anything could release it.
func (p *planner) holdOFED() {
	if !p.ofed() {
		return
	}
	for i := range p.nodes {
		w := &p.nodes[i]
		if !w.nics || w.elsewhere != "" || w.phase == v1alpha1.NodeInstalling || w.phase == v1alpha1.NodeRollingBack || ofedHeld(w) {
			continue
		}
		// A hold changes no phase: the rest of the pass (maintenance
		// domains among it) sees the node as the pass found it.
		moved := w.moved
		p.move(w, w.phase, "held with the OFED skip label: its OFED is replaced only inside its maintenance", func(t *Transition) { t.HoldOFED = true })
		w.moved = moved
	}
}

// ofedFailure says why node w, Installing, fails in its OFED step; empty
// when it does not, or when its OFED step is over.
func (p *planner) ofedFailure(w *work) string {
	target := p.spec.OFED.TargetVersion
	if !p.movesOFED() {
		switch {
		case w.n.OFEDFailed:
			return fmt.Sprintf("its OFED %s cannot come up", versionOr(w.n.OFEDVersion))
		case p.overdue(w, p.set.InstallTimeout):
			return fmt.Sprintf("its OFED not Ready within %s (%s)", short(p.set.InstallTimeout), p.ofedProgress(w))
		}
		return ""
	}
	switch {
	case v1alpha1.OFEDMatches(w.n.OFEDVersion, target) && w.n.OFEDFailed:
		return fmt.Sprintf("OFED %s failed to install", target)
	case ofedState(w) == v1alpha1.OperatorStateFailed:
		return fmt.Sprintf("the Network Operator marked the OFED upgrade to %s failed", target)
	case p.overdue(w, p.set.InstallTimeout):
		return fmt.Sprintf("OFED %s not through within %s (%s)", target, short(p.set.InstallTimeout), p.ofedProgress(w))
	}
	return ""
}

// ofedProgress describes where node w's OFED upgrade stands.
func (p *planner) ofedProgress(w *work) string {
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
	parts = append(parts, operatorStateOr(ofedState(w)))
	return strings.Join(parts, ", ")
}

// releaseOFEDReason is the Draining → Installing reason of a node whose
// OFED is replaced first.
func (p *planner) releaseOFEDReason(w *work) string {
	return fmt.Sprintf("drained in %s; OFED hold released: the Network Operator replaces OFED %s first, then driver %s",
		p.elapsed(w), p.spec.OFED.TargetVersion, p.spec.TargetVersion)
}

// installingOFED moves node w, Installing, through its OFED step; it
// reports whether the step is over (then installing goes on as for the GPU
// driver alone).
func (p *planner) installingOFED(w *work) bool {
	if !p.ofed() || !w.nics {
		return true
	}
	if !p.ofedThrough(w) {
		if ofedHeld(w) && p.needsOFED(w) {
			// Someone put the hold back: the Network Operator would
			// never replace the pod.
			p.move(w, w.phase, fmt.Sprintf("OFED hold released again: OFED %s is not replaced while held", p.spec.OFED.TargetVersion), func(t *Transition) { t.ReleaseOFED = true })
		}
		return false
	}
	label := w.n.Labels[v1alpha1.LabelDriver]
	switch {
	case label != p.spec.TargetVersion:
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("OFED %s %s after %s; installing driver %s", versionOr(p.ofedOf(w)), p.ofedDone(), p.elapsed(w), p.spec.TargetVersion), func(t *Transition) {
			t.Driver = p.spec.TargetVersion
			t.HoldOFED = !ofedHeld(w)
		})
		return false
	case p.staleDriver(w):
		p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("OFED %s %s after %s; restarting the driver %s pod so nvidia_peermem loads against it", versionOr(p.ofedOf(w)), p.ofedDone(), p.elapsed(w), p.spec.TargetVersion), func(t *Transition) {
			t.RestartDriver = true
			t.HoldOFED = !ofedHeld(w)
		})
		return false
	}
	return true
}

// ofedBack reports whether node w, rolling back, has the previous OFED
// (Ready) and a GPU driver pod started after it. Where not, fix (nil when
// there is nothing to do but wait) releases the node's hold, so that the
// Network Operator puts the previous OFED back once the NicClusterPolicy
// names it, or restarts a stale driver pod.
func (p *planner) ofedBack(w *work) (back bool, fix func()) {
	if !p.ofed() || !w.nics {
		return true, nil
	}
	if !p.movesOFED() {
		// Its OFED was never released: only a driver pod loaded before
		// it (an OFED pod restarted by a reboot) is restarted.
		if p.staleDriver(w) {
			return false, p.restartStale(w, p.spec.OFED.TargetVersion)
		}
		return true, nil
	}
	prev := p.spec.OFED.PreviousVersion
	// The NicClusterPolicy names the previous version again (the release
	// reverted, as render writes it under abort): every node's OFED goes
	// back. Where it is not known, an abort says the same.
	reverted := p.ofedPolicy == prev || p.ofedPolicy == "" && p.spec.Abort
	switch {
	case ofedOn(w, p.spec.OFED.TargetVersion) && !v1alpha1.OFEDMatches(w.n.OFEDVersion, prev) && !reverted:
		// Its new OFED works (the GPU driver failed, or the soak): the
		// GPU driver goes back alone, and the node runs the target OFED
		// with the previous GPU driver, built against it, until its next
		// maintenance. Held, as it cannot go back while the policy
		// names the target.
		if p.staleDriver(w) {
			return false, p.restartStale(w, p.spec.OFED.TargetVersion+" kept")
		}
		return true, nil
	case !v1alpha1.OFEDMatches(w.n.OFEDVersion, prev):
		if !ofedHeld(w) {
			return false, nil
		}
		return false, func() {
			p.move(w, w.phase, fmt.Sprintf("OFED hold released: OFED goes back to %s once the NicClusterPolicy names it again", prev), func(t *Transition) { t.ReleaseOFED = true })
		}
	case !ofedOn(w, prev):
		return false, nil
	case p.staleDriver(w):
		return false, p.restartStale(w, prev)
	}
	return true, nil
}

// restartStale restarts node w's GPU driver pod, rolling back, where it was
// loaded before the node's OFED (of version ofed) became Ready.
func (p *planner) restartStale(w *work, ofed string) func() {
	return func() {
		p.move(w, w.phase, fmt.Sprintf("OFED %s Ready; restarting the driver %s pod so nvidia_peermem loads against it", ofed, p.spec.PreviousVersion), func(t *Transition) {
			t.RestartDriver = true
		})
	}
}

// ofedRollbackWhy says, for a rollback that timed out, what of OFED kept it.
func (p *planner) ofedRollbackWhy(w *work) string {
	if !p.movesOFED() || !w.nics || ofedOn(w, p.spec.OFED.PreviousVersion) {
		return ""
	}
	return fmt.Sprintf("; OFED is not back on %s (%s): the NicClusterPolicy has one OFED version for the cluster, and a node's OFED goes back only once it names %s again",
		p.spec.OFED.PreviousVersion, p.ofedProgress(w), p.spec.OFED.PreviousVersion)
}

// ofedPolicyWait says why no node starts while the cluster's
// NicClusterPolicy names another OFED version than the rollout's target;
// empty when it names the target, or is not known.
func (p *planner) ofedPolicyWait() string {
	if !p.movesOFED() || p.ofedPolicy == "" || p.ofedPolicy == p.spec.OFED.TargetVersion {
		return ""
	}
	return fmt.Sprintf("waiting: the NicClusterPolicy names OFED %s, not the rollout's %s (a node released now would not get it)", p.ofedPolicy, p.spec.OFED.TargetVersion)
}

// ofedOf is the OFED version node w's maintenance brings it to: the
// target where the rollout moves OFED, else the one it runs.
func (p *planner) ofedOf(w *work) string {
	if p.movesOFED() {
		return p.spec.OFED.TargetVersion
	}
	return w.n.OFEDVersion
}

// ofedSelectors returns whether a node, by its labels, runs the rollout's
// OFED driver (spec.ofed.nodeSelectors: any matches; none, every node).
func (p *planner) ofedSelectors() func(labels.Set) bool {
	if !p.ofed() {
		return func(labels.Set) bool { return false }
	}
	if len(p.spec.OFED.NodeSelectors) == 0 {
		return func(labels.Set) bool { return true }
	}
	sels := p.selectors(p.spec.OFED.NodeSelectors, "ofed.nodeSelectors")
	return func(l labels.Set) bool { return matchesAny(sels, l) }
}

// ofedDone says how a node's OFED step ended: replaced (the Network
// Operator's upgrade-done) where the rollout moves OFED, else Ready.
func (p *planner) ofedDone() string {
	if p.movesOFED() {
		return "Ready (upgrade-done)"
	}
	return "Ready"
}
