package planner

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// The gpu-operator actuator (spec.actuator = gpu-operator): the GPU
// Operator's own upgrade controller (k8s-operator-libs pkg/upgrade) moves
// the nodes, and this planner only decides when each may go. The operator
// marks every node whose driver pod is out of date with its DaemonSet
// upgrade-required, and takes one past that state only when it does not
// carry the skip label (v1alpha1.LabelOperatorUpgradeSkip): so the planner
// holds every selected node with that label and releases a node by
// removing it, under the same gate as its own actuator (canary first and
// alone, approval by name, windows and freezes, pause, the failure budget)
// and the same bounds (parallelNodes, maxUnavailable counting every node
// out for any reason).
//
// A node's phases on this path:
//
//	Pending      held (skip label), whatever the operator says
//	Installing   released; the operator cordons, drains, restarts the driver
//	             pod, validates and uncordons it (upgrade-required …
//	             uncordon-required)
//	Soaking      upgrade-done and reporting the target: held again, watched
//	             for the spec's health signals for spec.soak
//	Done         soaked clean (held)
//	Quarantined  upgrade-failed, a crash-looping driver pod, an overrun, a
//	             signal or NotReady during the soak: the spec's quarantine
//	             label and taint, nothing else (held)
//	RollingBack  under abort only: released again so that the operator puts
//	             back the previous driver, which render has written on the
//	             pool's NVIDIADriver (the pool's rollback); RolledBack once
//	             the node reports it
//
// What the path cannot do, by construction: roll one node back (the
// DaemonSet has one version for the pool), cordon or uncordon anything (the
// operator owns the cordon; a node an admin cordoned is released with the
// operator's initial-state record, so the operator leaves it cordoned), or
// stop a node once released (the skip label is read at upgrade-required
// only).

// operator reports whether the GPU Operator's upgrade controller moves this
// rollout's nodes.
func (p *planner) operator() bool {
	return v1alpha1.ActuatorOf(p.spec) == v1alpha1.ActuatorGPUOperator
}

// operatorState is the operator's upgrade state of the node ("" before the
// operator looked at it).
func operatorState(w *work) string { return w.n.Labels[v1alpha1.LabelOperatorUpgradeState] }

// held reports whether the node carries the operator's skip label.
func held(w *work) bool { return w.n.Labels[v1alpha1.LabelOperatorUpgradeSkip] == "true" }

// released reports whether a node in phase ph is in the operator's hands on
// this path: its skip label is off.
func released(ph v1alpha1.NodePhase) bool {
	return ph == v1alpha1.NodeInstalling || ph == v1alpha1.NodeRollingBack
}

// OperatorReleased reports whether a node in phase ph of a gpu-operator
// rollout is released to the operator (its skip label removed).
func OperatorReleased(ph v1alpha1.NodePhase) bool { return released(ph) }

// operatorTimeout bounds a released node: the operator's wait for jobs, its
// drain, the driver pod's install and its validation, each with gpufleet's
// own timeout. The
// operator has no install timeout of its own (it fails a node only after
// more than ten restarts of the driver pod), so this is the bound a hung
// upgrade meets.
func (p *planner) operatorTimeout() time.Duration {
	return p.set.JobWait + p.set.DrainTimeout + p.set.InstallTimeout + p.set.ValidateTimeout
}

// planOperator is Plan on this path: settle, progress, start, then hold
// every selected node that is not released and lacks the skip label.
func (p *planner) planOperator() {
	// Holds go first: the operator acts on every node write, and a release
	// written before a hold would let it take a node still unheld.
	p.holdAll()
	p.settleOperator()
	// After the settles, which label a settled node's pool themselves; a
	// node held in this pass joins in the next (one write a pass).
	p.join()
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere != "" {
			continue
		}
		if p.spec.Abort && p.abortOperator(w) {
			continue
		}
		switch w.phase {
		case v1alpha1.NodeInstalling:
			p.upgradingOperator(w)
		case v1alpha1.NodeSoaking:
			p.soakingOperator(w)
		case v1alpha1.NodeRollingBack:
			p.revertingOperator(w)
		}
	}
	if p.spec.Abort {
		p.abortReleases()
	}
	p.startOperator()
}

// settleOperator marks Done the pending nodes that already run the target
// and that the operator finds up to date (not upgrade-required, not in an
// upgrade): nothing to release them for. Canary nodes are never settled:
// the canary must prove the driver.
func (p *planner) settleOperator() {
	if p.spec.Abort {
		return
	}
	pools := p.poolSelectors()
	for i := range p.nodes {
		w := &p.nodes[i]
		st := operatorState(w)
		if w.canary || w.elsewhere != "" || !p.onTarget(w) || st == v1alpha1.OperatorStateUpgradeRequired || v1alpha1.OperatorUpgrading(st) {
			continue
		}
		p.move(w, v1alpha1.NodeDone, fmt.Sprintf("already on driver %s: nothing for the operator to upgrade", p.spec.TargetVersion), func(t *Transition) {
			t.Driver = p.spec.TargetVersion
			t.Hold = !held(w)
			t.Pool = pools.missing(w.n)
		})
	}
}

// quarantineOperator fails a node on this path: the spec's quarantine label
// and taint, and the skip label back on. No cordon and no rollback: the
// operator owns the cordon, and the DaemonSet has one version.
func (p *planner) quarantineOperator(w *work, reason string, failure bool) {
	p.move(w, v1alpha1.NodeQuarantined, reason+"; quarantined (label and taint only: this path has no per-node rollback)", func(t *Transition) {
		t.Failure = failure
		t.Quarantine = true
		t.Hold = !held(w)
	})
}

// upgradingOperator follows a released node through the operator's states.
func (p *planner) upgradingOperator(w *work) {
	st := operatorState(w)
	switch {
	case st == v1alpha1.OperatorStateFailed:
		p.quarantineOperator(w, fmt.Sprintf("the operator reports %s after %s", st, p.elapsed(w)), true)
	case w.n.DriverFailed:
		// The operator would wait for more than ten restarts: the crash
		// loop is enough to know the driver does not install here.
		p.quarantineOperator(w, fmt.Sprintf("driver %s pod failing (%s)", p.spec.TargetVersion, operatorStateOr(st)), true)
	case st == v1alpha1.OperatorStateDone && w.n.Ready && DriverMatches(w.n.DriverVersion, p.spec.TargetVersion):
		p.move(w, v1alpha1.NodeSoaking, fmt.Sprintf("the operator reports upgrade-done after %s and the node reports %s; held again, soaking for %s",
			p.elapsed(w), reportedAs(w.n.DriverVersion, p.spec.TargetVersion), short(p.set.Soak)), func(t *Transition) {
			t.Hold = !held(w)
		})
	case p.overdue(w, p.operatorTimeout()):
		p.quarantineOperator(w, fmt.Sprintf("not upgraded within %s (the operator reports %s, the node %s)", short(p.operatorTimeout()), operatorStateOr(st), versionOr(w.n.DriverVersion)), true)
	}
}

// soakingOperator watches an upgraded node as the gpufleet actuator does;
// a failure quarantines it.
func (p *planner) soakingOperator(w *work) {
	for _, s := range w.n.Signals {
		if s.At.Before(w.n.Since) || s.At.After(p.now) {
			continue
		}
		msg := s.Reason
		if s.Message != "" {
			msg += " (" + s.Message + ")"
		}
		p.quarantineOperator(w, fmt.Sprintf("%s %s after %s of soak", s.Source, msg, short(s.At.Sub(w.n.Since))), true)
		return
	}
	switch {
	case !w.n.Ready:
		p.quarantineOperator(w, fmt.Sprintf("node went NotReady after %s of soak", p.elapsed(w)), true)
	case p.overdue(w, p.set.Soak):
		reason := fmt.Sprintf("soaked %s clean on %s", short(p.set.Soak), p.spec.TargetVersion)
		if w.unschedulable {
			reason += "; left cordoned (the operator keeps a cordon it found)"
		}
		p.move(w, v1alpha1.NodeDone, reason, func(t *Transition) {
			t.Driver = p.spec.TargetVersion
			t.Hold = !held(w)
		})
	}
}

// abortOperator: under abort, a node in the operator's hands already
// (Installing) turns to the previous driver at once, as render reverted the
// pool's NVIDIADriver; the nodes that reached the new driver (Soaking,
// Done) are released for it by abortReleases, into free slots: the
// operator takes no more than maxParallelUpgrades, and a timeout running
// while a node waits in its queue would fail a healthy node. Pending
// nodes stay held.
func (p *planner) abortOperator(w *work) bool {
	if w.phase != v1alpha1.NodeInstalling {
		return false
	}
	p.move(w, v1alpha1.NodeRollingBack, fmt.Sprintf("rollout aborted while %s; the operator puts back %s, the pool's driver again", w.phase, p.spec.PreviousVersion), nil)
	return true
}

// abortReleases releases Soaking and Done nodes for the pool's rollback,
// as many as slots and maxUnavailable allow.
func (p *planner) abortReleases() {
	slots, unavailable := 0, 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.slotTaken() {
			slots++
		}
		if w.operatorUnavailable() {
			unavailable++
		}
	}
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere != "" || (w.phase != v1alpha1.NodeSoaking && w.phase != v1alpha1.NodeDone) {
			continue
		}
		cost := 1
		if w.operatorUnavailable() {
			cost = 0
		}
		if slots >= p.set.Parallel || unavailable+cost > p.set.MaxUnavailable {
			p.blocked = fmt.Sprintf("waiting: nodes to put back on %s wait for a slot", p.spec.PreviousVersion)
			return
		}
		from := w.phase
		p.move(w, v1alpha1.NodeRollingBack, fmt.Sprintf("rollout aborted while %s; released for the operator to put back %s, the pool's driver again", from, p.spec.PreviousVersion), func(t *Transition) {
			t.Release = true
			// This path never cordons: a cordon on a soaking or done
			// node is someone else's, which the operator must keep.
			t.KeepCordon = w.unschedulable
		})
		slots++
		unavailable += cost
	}
}

// revertingOperator follows a node the abort released back to the
// previous driver.
func (p *planner) revertingOperator(w *work) {
	st := operatorState(w)
	timeout := p.operatorTimeout()
	switch {
	case st == v1alpha1.OperatorStateDone && w.n.Ready && DriverMatches(w.n.DriverVersion, p.spec.PreviousVersion):
		p.move(w, v1alpha1.NodeRolledBack, fmt.Sprintf("back on %s after %s (the operator reports upgrade-done); held again", p.spec.PreviousVersion, p.elapsed(w)), func(t *Transition) {
			t.Driver = p.spec.PreviousVersion
			t.Hold = !held(w)
		})
	case st == v1alpha1.OperatorStateFailed:
		p.quarantineOperator(w, fmt.Sprintf("going back to %s: the operator reports %s", p.spec.PreviousVersion, st), false)
	case p.overdue(w, timeout):
		p.quarantineOperator(w, fmt.Sprintf("not back on %s within %s (the operator reports %s)", p.spec.PreviousVersion, short(timeout), operatorStateOr(st)), false)
	}
}

// operatorUnavailable: out of service for any reason, as this path sees it.
// A released node counts (the operator cordons it), a soaking one only when
// cordoned: the operator has put it back in service.
func (w *work) operatorUnavailable() bool {
	return w.unschedulable || !w.n.Ready || w.outOfService || w.elsewhere != "" ||
		released(w.phase) || w.phase == v1alpha1.NodeQuarantined
}

// slotTaken: the node holds one of parallelNodes: it is in flight in this
// rollout (a soak included, as on the gpufleet path), or the operator counts
// it as an upgrade in progress, which it does for upgrade-failed nodes too,
// so that it would not take another node in its place.
func (w *work) slotTaken() bool {
	return w.phase.InFlight() || (w.elsewhere == "" && v1alpha1.OperatorUpgrading(operatorState(w)))
}

// startOperator releases pending nodes the operator has marked
// upgrade-required into free slots, canary nodes first and alone, already
// unavailable nodes before the others (they cost no extra unavailability),
// as start does on the gpufleet path.
func (p *planner) startOperator() {
	g := p.gate()
	if !g.open {
		return
	}
	slots, unavailable, othersInFlight, operatorFailed := 0, 0, 0, 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.slotTaken() {
			slots++
			if !w.canary && w.phase.InFlight() {
				othersInFlight++
			}
			if !w.phase.InFlight() {
				operatorFailed++
			}
		}
		if w.operatorUnavailable() {
			unavailable++
		}
	}
	if slots >= p.set.Parallel {
		if operatorFailed > 0 {
			// Say how to get out: the operator frees the slot only once the
			// node's driver pod runs in sync (a repaired node), or when the
			// node is gone.
			p.blocked = fmt.Sprintf("waiting: the operator counts %s in %s as upgrades in progress (maxParallelUpgrades %d): "+
				"repair or remove the failed node(s), or raise parallel-nodes", plural(operatorFailed, "node"), v1alpha1.OperatorStateFailed, p.set.Parallel)
		}
		return
	}
	if g.canaryOnly && othersInFlight > 0 {
		p.blocked = fmt.Sprintf("waiting: %s outside the canary still in flight", plural(othersInFlight, "node"))
		return
	}
	p.fill(g.canaryOnly, slots, unavailable, (*work).operatorUnavailable, p.releasable, func(w *work) {
		if p.inPlace(w) {
			p.soakInPlace(w)
		} else {
			p.releaseNode(w, g.canaryOnly)
		}
	})
}

// inPlace: a canary node already on the target that the operator finds up
// to date (upgraded before its hold landed, or by hand) will never be
// marked upgrade-required: it soaks where it is, to prove the driver,
// instead of waiting for ever.
func (p *planner) inPlace(w *work) bool {
	st := operatorState(w)
	return w.canary && p.onTarget(w) && st != v1alpha1.OperatorStateUpgradeRequired && !v1alpha1.OperatorUpgrading(st)
}

// releasable says whether a pending node can be started on this path now.
func (p *planner) releasable(w *work) readiness {
	switch {
	case p.inPlace(w) && p.holding(w.n.Name):
		// Held in this pass: it soaks in the next, its one write per pass
		// made.
		return notNow
	case !p.inPlace(w) && operatorState(w) != v1alpha1.OperatorStateUpgradeRequired:
		// The operator has not found its driver pod out of date (yet):
		// releasing it would do nothing.
		return notMarked
	}
	return readyNow
}

// soakInPlace starts a canary node that already runs the target: held (it
// stays out of the operator's hands), soaking as an upgraded node does.
func (p *planner) soakInPlace(w *work) {
	p.move(w, v1alpha1.NodeSoaking, fmt.Sprintf("canary node already on driver %s (the operator finds it up to date): held, soaking for %s to prove the driver",
		reportedAs(w.n.DriverVersion, p.spec.TargetVersion), short(p.set.Soak)), func(t *Transition) {
		t.Hold = !held(w)
	})
}

// releaseNode hands a node to the operator. A cordoned node is released
// with the operator's initial-state record (KeepCordon), so the operator
// ends it without lifting the cordon; move records the admin's cordon.
func (p *planner) releaseNode(w *work, canary bool) {
	what := "node"
	if canary {
		what = "canary node"
	}
	reason := fmt.Sprintf("%s released to the GPU Operator's upgrade controller for driver %s", what, p.spec.TargetVersion)
	if w.unschedulable {
		reason += "; already cordoned by someone else, so the operator is told to leave it cordoned"
	}
	p.move(w, v1alpha1.NodeInstalling, reason, func(t *Transition) {
		t.Release = true
		t.KeepCordon = w.unschedulable
	})
}

// holdAll puts the skip label on every selected node this rollout may move
// that is not released and lacks it: pending nodes before they could be
// upgraded, and finished ones again (after someone removed it), so that the
// next version render writes reaches no node before its rollout releases
// it. The moves that finish a node hold it themselves. A soaking node is
// left to the move that held it, as a hold would restart its soak.
func (p *planner) holdAll() {
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere != "" || released(w.phase) || w.phase == v1alpha1.NodeSoaking || held(w) || p.holding(w.n.Name) {
			continue
		}
		reason := "held with the operator's skip label until the rollout releases it"
		if w.phase != v1alpha1.NodePending {
			reason = "skip label put back: held from the operator's next upgrade"
		}
		p.move(w, w.phase, reason, func(t *Transition) { t.Hold = true })
	}
}

// holding reports whether this pass already holds the node.
func (p *planner) holding(node string) bool {
	for i := range p.out {
		if p.out[i].Node == node && p.out[i].Hold {
			return true
		}
	}
	return false
}

func operatorStateOr(s string) string {
	if s == "" {
		return "no upgrade state"
	}
	return s
}

func versionOr(v string) string {
	if v == "" {
		return "no version"
	}
	return v
}

// operatorTaintProblem refuses, on the operator's path, a quarantine taint
// the operator's driver DaemonSet does not tolerate: such a taint takes the
// node out of the DaemonSet's desired count while its driver pod runs on,
// and the operator's upgrade controller then builds no state at all ("driver
// DaemonSet should not have Unscheduled pods"): one quarantined node would
// stop every upgrade of the cluster. render makes the DaemonSet tolerate
// gpufleet's own taint only, so only that one is safe here.
func operatorTaintProblem(spec *v1alpha1.DriverRolloutSpec) string {
	t := spec.Quarantine.Taint
	if v1alpha1.ActuatorOf(spec) != v1alpha1.ActuatorGPUOperator || t == nil || t.Key == v1alpha1.TaintQuarantined ||
		(t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute) {
		return ""
	}
	return fmt.Sprintf("spec.quarantine.taint %s:%s: on the %s actuator the operator's driver DaemonSet tolerates only %s "+
		"(render writes that toleration), and a node with another %s taint would stop every upgrade of the cluster; "+
		"leave spec.quarantine.taint unset or use key %s", t.Key, t.Effect, v1alpha1.ActuatorGPUOperator,
		v1alpha1.TaintQuarantined, t.Effect, v1alpha1.TaintQuarantined)
}
