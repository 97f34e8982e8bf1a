package planner

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// status summarises the rollout after this pass's transitions. Conditions
// keep their last transition time from the previous status when unchanged,
// so writing the status every pass changes nothing and causes no events.
func (p *planner) status() v1alpha1.DriverRolloutStatus {
	st := v1alpha1.DriverRolloutStatus{
		ObservedGeneration: p.ro.Generation,
		Total:              int32(p.total),
		Conditions:         append([]metav1.Condition(nil), p.ro.Status.Conditions...),
	}
	pending, inFlightN := 0, 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere != "" {
			st.Nodes.Elsewhere++
			continue
		}
		countPhase(&st.Nodes, w.phase)
		if w.failed {
			st.BudgetUsed++
		}
		if w.canary {
			st.Canary.Nodes = append(st.Canary.Nodes, w.n.Name)
		}
		switch {
		case w.phase == v1alpha1.NodePending:
			pending++
		case w.phase.InFlight():
			inFlightN++
		}
	}
	st.Progress = fmt.Sprintf("%d/%d", st.Nodes.Done, st.Total)
	st.Canary.Result = p.canaryState()

	var g gate
	if len(p.problems) > 0 {
		g = gate{phase: v1alpha1.PhaseStalled, cond: v1alpha1.ConditionStalled, reason: "InvalidSpec", msg: strings.Join(p.problems, "; ")}
	} else {
		g = p.gate()
	}
	phase := g.phase
	finished := pending == 0 && inFlightN == 0 && st.Nodes.Elsewhere == 0
	switch {
	case len(p.problems) > 0:
	case p.spec.Abort && inFlightN == 0:
		phase = v1alpha1.PhaseAborted
	case p.spec.Abort:
		phase = v1alpha1.PhaseAborting
	case finished && g.phase != v1alpha1.PhaseStalled && st.BudgetUsed > 0:
		// Every node is through, but the failed ones are on the old
		// driver or out of service: not Completed, which would say the
		// rollout did what it was for.
		phase = v1alpha1.PhaseCompletedWithFailures
	case finished && g.phase != v1alpha1.PhaseStalled:
		phase = v1alpha1.PhaseCompleted
	}
	st.Phase = phase
	p.conditions(&st, g, inFlightN, pending)
	return st
}

// overlap describes the selected nodes left to other rollouts, grouped by
// rollout in name order, naming a few nodes of each; "" when there are
// none. It changes only when those nodes change, so writing it every pass
// causes no events.
func (p *planner) overlap() string {
	type group struct {
		taken, first []string
	}
	groups := map[string]*group{}
	var names []string
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere == "" {
			continue
		}
		g := groups[w.elsewhere]
		if g == nil {
			g = &group{}
			groups[w.elsewhere] = g
			names = append(names, w.elsewhere)
		}
		if w.taken {
			g.taken = append(g.taken, w.n.Name)
		} else {
			g.first = append(g.first, w.n.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	few := func(nodes []string) string {
		const shown = 3
		if len(nodes) > shown {
			return strings.Join(nodes[:shown], ", ") + fmt.Sprintf(", and %d more", len(nodes)-shown)
		}
		return strings.Join(nodes, ", ")
	}
	var parts []string
	for _, name := range names {
		g := groups[name]
		if len(g.taken) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s to DriverRollout %s (%s)", plural(len(g.taken), "node"), belong(len(g.taken)), name, few(g.taken)))
		}
		if len(g.first) > 0 {
			parts = append(parts, fmt.Sprintf("%s left to the older DriverRollout %s, which selects them too (%s)", plural(len(g.first), "node"), name, few(g.first)))
		}
	}
	return fmt.Sprintf("%s of %d selected: %s; they are left alone and count as unavailable until released",
		plural(int(p.elsewhere()), "node"), p.total, strings.Join(parts, "; "))
}

func belong(n int) string {
	if n == 1 {
		return "belongs"
	}
	return "belong"
}

// elsewhere counts the selected nodes left to other rollouts.
func (p *planner) elsewhere() int32 {
	var n int32
	for i := range p.nodes {
		if p.nodes[i].elsewhere != "" {
			n++
		}
	}
	return n
}

func countPhase(c *v1alpha1.NodeCounts, ph v1alpha1.NodePhase) {
	switch ph {
	case v1alpha1.NodePending:
		c.Pending++
	case v1alpha1.NodeDraining:
		c.Draining++
	case v1alpha1.NodeInstalling:
		c.Installing++
	case v1alpha1.NodeValidating:
		c.Validating++
	case v1alpha1.NodeSoaking:
		c.Soaking++
	case v1alpha1.NodeDone:
		c.Done++
	case v1alpha1.NodeRollingBack:
		c.RollingBack++
	case v1alpha1.NodeRolledBack:
		c.RolledBack++
	case v1alpha1.NodeQuarantined:
		c.Quarantined++
	}
}

// conditions sets every condition from the phase, each by one rule, so a
// condition never contradicts the phase.
func (p *planner) conditions(st *v1alpha1.DriverRolloutStatus, g gate, inFlightN, pending int) {
	set := func(typ string, on bool, reason, msg string) {
		status := metav1.ConditionFalse
		if on {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: p.ro.Generation, LastTransitionTime: metav1.NewTime(p.now),
		})
	}
	done := fmt.Sprintf("%d of %d nodes on %s, %d rolled back, %d quarantined",
		st.Nodes.Done, st.Total, p.spec.TargetVersion, st.Nodes.RolledBack, st.Nodes.Quarantined)
	if st.BudgetUsed > 0 && st.Phase == v1alpha1.PhaseCompletedWithFailures {
		done += fmt.Sprintf(": %s failed and %s not on %s", plural(int(st.BudgetUsed), "node"), isAre(int(st.BudgetUsed)), p.spec.TargetVersion)
	}
	msg := g.msg
	if msg == "" {
		msg = fmt.Sprintf("%s in flight, %d pending", plural(inFlightN, "node"), pending)
		if p.blocked != "" {
			msg += "; " + p.blocked
		}
		if held := p.heldForDomains(); held != "" {
			msg += "; " + held
		}
		if st.Nodes.Elsewhere > 0 {
			msg += fmt.Sprintf("; %s left to other rollouts (see Overlap)", plural(int(st.Nodes.Elsewhere), "node"))
		}
	}
	ph := st.Phase
	reason := string(ph)
	if ph == v1alpha1.PhaseStalled {
		reason = g.reason
	}

	// kstatus: Ready only when finished well; Stalled when it will not go on
	// by itself; Reconciling while it is working or will resume by itself.
	switch ph {
	case v1alpha1.PhaseCompleted:
		set(v1alpha1.ConditionReady, true, "Completed", done)
	case v1alpha1.PhaseCompletedWithFailures:
		set(v1alpha1.ConditionReady, false, reason, done)
		msg = done + "; look at them, then roll them out with a new rollout"
	default:
		set(v1alpha1.ConditionReady, false, reason, msg)
	}
	// A rollout that completed with failures goes no further by itself and
	// left nodes off the target: Stalled, as kstatus means it, so Flux's
	// health check fails the lifecycle step and alerts.
	stalled := ph == v1alpha1.PhaseStalled || ph == v1alpha1.PhaseCompletedWithFailures
	set(v1alpha1.ConditionStalled, stalled, reasonOr(stalled, reason, "NotStalled"), msgOr(stalled, msg))
	reconciling := ph == v1alpha1.PhaseProgressing || ph == v1alpha1.PhaseAborting ||
		ph == v1alpha1.PhaseOutsideWindow || (inFlightN > 0 && !stalled)
	set(v1alpha1.ConditionReconciling, reconciling, reasonOr(reconciling, reason, "NotReconciling"), msgOr(reconciling, msg))

	set(v1alpha1.ConditionWaitingForApproval, g.cond == v1alpha1.ConditionWaitingForApproval,
		reasonOr(g.cond == v1alpha1.ConditionWaitingForApproval, "WaitingForApproval", "NotWaiting"),
		msgOr(g.cond == v1alpha1.ConditionWaitingForApproval, g.msg))
	outside := g.cond == v1alpha1.ConditionOutsideWindow && pending > 0
	set(v1alpha1.ConditionOutsideWindow, outside, reasonOr(outside, "OutsideWindow", "InsideWindow"), msgOr(outside, g.msg))
	set(v1alpha1.ConditionPaused, p.spec.Paused, reasonOr(p.spec.Paused, "Paused", "NotPaused"),
		msgOr(p.spec.Paused, "spec.paused is set: nothing new starts, nodes in flight finish"))
	exhausted := int(st.BudgetUsed) > p.set.FailureBudget
	set(v1alpha1.ConditionBudgetExhausted, exhausted, reasonOr(exhausted, "BudgetExhausted", "WithinBudget"),
		fmt.Sprintf("%d of %d failures allowed used", st.BudgetUsed, p.set.FailureBudget))
	completed := ph == v1alpha1.PhaseCompleted
	set(v1alpha1.ConditionCompleted, completed, reasonOr(completed, "Completed", "NotCompleted"), msgOr(completed, done))
	withFailures := ph == v1alpha1.PhaseCompletedWithFailures
	set(v1alpha1.ConditionCompletedWithFailures, withFailures, reasonOr(withFailures, "NodesFailed", "NoFailedCompletion"), msgOr(withFailures, done))
	aborted := p.spec.Abort
	set(v1alpha1.ConditionAborted, aborted, reasonOr(aborted, string(ph), "NotAborted"), msgOr(aborted, msg))
	over := p.overlap()
	set(v1alpha1.ConditionOverlap, over != "", reasonOr(over != "", "NodesOfAnotherRollout", "NoOverlap"), over)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func reasonOr(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}

func msgOr(on bool, msg string) string {
	if on {
		return msg
	}
	return ""
}
