package planner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// gate is why the rollout may or may not start nodes now.
type gate struct {
	// open: nodes may start (subject to slots and maxUnavailable).
	open bool
	// phase and reason describe a closed gate for the status.
	phase  v1alpha1.RolloutPhase
	cond   string // the domain condition that explains it
	reason string // condition reason
	msg    string
	// canaryOnly: only canary nodes may start.
	canaryOnly bool
}

// canaryState summarises the canary nodes.
func (p *planner) canaryState() v1alpha1.CanaryResult {
	total, done, started := 0, 0, 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if !w.canary {
			continue
		}
		total++
		switch {
		case w.failed:
			return v1alpha1.CanaryFailed
		case w.phase == v1alpha1.NodeDone:
			// Only Done counts: a canary node rolled back by an abort
			// is on the old driver and proves nothing about the new one.
			done++
		}
		if w.phase != v1alpha1.NodePending {
			started++
		}
	}
	switch {
	case p.canaryDecided():
		// Passed or failed once, so it stays (markCanary).
		return p.ro.Status.Canary.Result
	case total == 0:
		return v1alpha1.CanaryNone
	case done == total:
		return v1alpha1.CanaryPassed
	case started > 0:
		return v1alpha1.CanaryInProgress
	}
	return v1alpha1.CanaryPending
}

func (p *planner) approved() bool { return p.spec.Approval == p.ro.Name }

// gate decides whether nodes may start now, in order of precedence: the
// first closed gate is the one the status reports.
func (p *planner) gate() gate {
	failures := p.failures()
	switch {
	case p.spec.Abort:
		return gate{phase: v1alpha1.PhaseAborting, cond: v1alpha1.ConditionAborted, reason: "Aborted",
			msg: "spec.abort is set: nothing starts and every node that reached the new driver rolls back"}
	case failures > p.set.FailureBudget:
		return gate{phase: v1alpha1.PhaseStalled, cond: v1alpha1.ConditionBudgetExhausted, reason: "BudgetExhausted",
			msg: fmt.Sprintf("%s failed, more than the failure budget of %d: nothing more starts", plural(failures, "node"), p.set.FailureBudget)}
	}
	cs := p.canaryState()
	switch {
	case cs == v1alpha1.CanaryFailed:
		return gate{phase: v1alpha1.PhaseStalled, cond: v1alpha1.ConditionStalled, reason: "CanaryFailed",
			msg: fmt.Sprintf("a canary node failed on %s: the rollout stops at the canary", p.spec.TargetVersion)}
	case p.spec.Paused:
		return gate{phase: v1alpha1.PhasePaused, cond: v1alpha1.ConditionPaused, reason: "Paused",
			msg: "spec.paused is set: nothing new starts, nodes in flight finish"}
	case cs == v1alpha1.CanaryPassed && !p.approved() && !p.spec.Canary.AutoApproveAfterSoak:
		msg := fmt.Sprintf("canary passed; set spec.approval to %q to proceed", p.ro.Name)
		if p.spec.Approval != "" {
			msg = fmt.Sprintf("canary passed; spec.approval %q does not name this rollout, set it to %q to proceed", p.spec.Approval, p.ro.Name)
		}
		return gate{phase: v1alpha1.PhaseWaitingForApproval, cond: v1alpha1.ConditionWaitingForApproval, reason: "WaitingForApproval", msg: msg}
	}
	if ok, why := p.cal.Allowed(p.now); !ok {
		msg := why
		if next := p.cal.NextAllowed(p.now); !next.IsZero() {
			if p.startable() {
				// Waking for a window matters only to a node that
				// could start in it.
				p.wake(next)
			}
			msg += fmt.Sprintf("; next start possible at %s", next.UTC().Format("2006-01-02 15:04 MST"))
		}
		return gate{phase: v1alpha1.PhaseOutsideWindow, cond: v1alpha1.ConditionOutsideWindow, reason: "OutsideWindow", msg: msg}
	}
	g := gate{open: true, phase: v1alpha1.PhaseProgressing}
	if cs == v1alpha1.CanaryPending || cs == v1alpha1.CanaryInProgress {
		g.canaryOnly = true
	}
	return g
}

// startable reports whether some selected node is pending and this
// rollout's to move.
func (p *planner) startable() bool {
	for i := range p.nodes {
		if w := &p.nodes[i]; w.phase == v1alpha1.NodePending && w.elsewhere == "" {
			return true
		}
	}
	return false
}

// start fills free slots with pending nodes, canary nodes first and alone.
func (p *planner) start() {
	g := p.gate()
	if !g.open {
		return
	}
	if why := p.ofed.startWait(); why != "" {
		p.blocked = why
		return
	}
	inFlightN, unavailable, othersInFlight := 0, 0, 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.phase.InFlight() {
			inFlightN++
			if !w.canary {
				othersInFlight++
			}
		}
		if w.unavailable() {
			unavailable++
		}
	}
	if inFlightN >= p.set.Parallel {
		return
	}
	// The canary runs alone: if other nodes are in flight (the canary was
	// changed mid-rollout, or a canary node joined late), let them finish
	// first so that the canary's result is its own.
	if g.canaryOnly && othersInFlight > 0 {
		p.blocked = fmt.Sprintf("waiting: %s outside the canary still in flight", plural(othersInFlight, "node"))
		return
	}
	p.fill(g.canaryOnly, inFlightN, unavailable, (*work).unavailable, p.startReady, func(w *work) { p.startNode(w, g.canaryOnly) })
}

// readiness is whether a pending node can start now on an actuator, beyond
// what fill checks itself.
type readiness int

const (
	readyNow readiness = iota
	// notMarked: the actuator cannot start it yet (the operator has not
	// marked it upgrade-required); counted, and said when nothing starts.
	notMarked
	// notNow: it waits for the next pass, silently.
	notNow
)

// fill starts pending nodes into the slots left by busy (nodes holding one
// of parallelNodes), within maxUnavailable (unavailable counts the nodes out
// already, out says whether a node is), canary nodes alone while only they
// may start; ready, when set, tells the nodes the actuator cannot start yet;
// start starts one. When nothing starts although nodes wait, p.blocked says
// why, so that a rollout held back by broken nodes explains itself.
func (p *planner) fill(canaryOnly bool, busy, unavailable int, out func(*work) bool, ready func(*work) readiness, start func(*work)) {
	// Nodes that are already out of service (cordoned by an admin) cost no
	// extra unavailability, so they go first (pass 0): upgrading them while
	// they are out anyway is free, and they may be what frees room for the
	// rest (pass 1). Two passes rather than two lists: no allocation on
	// pools of thousands of nodes.
	started, candidates, notReady, unavailableSkips, unmarked := 0, 0, 0, 0, 0
	domainWait := "" // why a maintenance domain waits (fillDomain)
	order := p.startOrder()
	for pass := range 2 {
		for k := range p.nodes {
			i := k
			if order != nil {
				i = order[k]
			}
			w := &p.nodes[i]
			if w.phase != v1alpha1.NodePending || w.elsewhere != "" || w.canary != canaryOnly || out(w) != (pass == 0) {
				continue
			}
			candidates++
			if busy >= p.set.Parallel {
				break
			}
			if d := p.domainOf(w); d != nil {
				// The domain goes as one unit, decided on at its first
				// node in the order (see domains.go).
				if d.tried {
					continue
				}
				n, cost, wait := p.fillDomain(d, canaryOnly, busy, unavailable, out, ready, start)
				switch wait {
				case "":
				case "skip":
					unavailableSkips++
				default:
					domainWait = wait
				}
				started += n
				busy += n
				unavailable += cost
				continue
			}
			if ready != nil {
				switch ready(w) {
				case notMarked:
					unmarked++
					continue
				case notNow:
					continue
				}
			}
			// A NotReady node cannot be drained or validated, and a node
			// out for other reasons (remediation) belongs to someone else
			// now: both wait, without blocking the others.
			if !w.n.Ready || w.outOfService {
				notReady++
				continue
			}
			cost := 1
			if out(w) {
				cost = 0
			}
			if unavailable+cost > p.set.MaxUnavailable {
				unavailableSkips++
				continue
			}
			start(w)
			started++
			busy++
			unavailable += cost
		}
	}
	if started > 0 || candidates == 0 || busy >= p.set.Parallel {
		return
	}
	switch {
	case domainWait != "":
		p.blocked = "waiting: " + domainWait
	case unavailableSkips > 0:
		p.blocked = fmt.Sprintf("waiting: %d of %d nodes unavailable, maxUnavailable %d", unavailable, p.total, p.set.MaxUnavailable)
	case notReady > 0:
		p.blocked = fmt.Sprintf("waiting: %s pending but NotReady or out of service", plural(notReady, "node"))
	case unmarked > 0:
		p.blocked = fmt.Sprintf("waiting: the operator has not marked %s %s", plural(unmarked, "pending node"), v1alpha1.OperatorStateUpgradeRequired)
	}
}

// startOrder is the order fill takes the nodes in: the cheapest first, by
// the GPU work a drain would destroy (Node.GPUPods, Node.GPUWork): nodes
// with no GPU pod, then the least GPU work in flight, each group in the
// nodes' own order. Nil, the nodes' own order, when no node holds a GPU
// pod (or none was observed): no allocation on an idle pool.
//
// No node waits for ever: the pending nodes are a set that only shrinks
// (a started node never comes back to Pending, a node that joins is
// labelled, not started), so a busy node is taken once the nodes cheaper
// than it have gone, at the latest as the last one.
func (p *planner) startOrder() []int {
	busy := false
	for i := range p.nodes {
		if p.nodes[i].phase == v1alpha1.NodePending && p.nodes[i].n.GPUPods > 0 {
			busy = true
			break
		}
	}
	if !busy {
		return nil
	}
	order := make([]int, len(p.nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, wa := p.costOf(&p.nodes[a])
		pb, wb := p.costOf(&p.nodes[b])
		if c := cmp.Compare(min(pa, 1), min(pb, 1)); c != 0 {
			return c
		}
		return cmp.Compare(wa, wb)
	})
	p.costOrdered = true
	return order
}

// costOf is what starting w destroys at most: its GPU pods and work, or
// its maintenance domain's, which starts with it.
func (p *planner) costOf(w *work) (pods int, gpuWork float64) {
	if d := p.domainOf(w); d != nil {
		return d.gpuPods, d.gpuWork
	}
	return w.n.GPUPods, w.n.GPUWork
}

// startReady says whether a pending node can be started on this path now:
// a node joined on the target waits for its own install (joinWait).
func (p *planner) startReady(w *work) readiness {
	if p.joinWait(w) {
		return notNow
	}
	return readyNow
}

func (p *planner) startNode(w *work, canary bool) {
	what := "node"
	if canary {
		what = "canary node"
	}
	if d := p.domainOf(w); d != nil && len(d.nodes) > 1 {
		what += fmt.Sprintf(" of maintenance domain %s (%s, starting as one)", d.key, plural(len(d.nodes), "node"))
	}
	if p.costOrdered {
		what += " " + gpuWorkOf(w.n)
	}
	reason := fmt.Sprintf("%s started: cordoning and draining for driver %s", what, p.spec.TargetVersion)
	if w.unschedulable {
		reason = fmt.Sprintf("%s started: already cordoned by an admin, draining for driver %s", what, p.spec.TargetVersion)
	}
	// move records the admin's cordon when the node is cordoned already.
	p.move(w, v1alpha1.NodeDraining, reason, func(t *Transition) {
		t.Cordon = !w.unschedulable
		if p.computeDomains() {
			t.ComputeDomain = p.domainKey(w)
		}
	})
}

// gpuWorkOf says what a node's drain destroys at most, for the reason of
// its start: "(idle: no GPU pod)", "(2 GPU pods, 3.5 GPU-hours in flight)".
func gpuWorkOf(n *Node) string {
	if n.GPUPods == 0 {
		return "(idle: no GPU pod)"
	}
	return fmt.Sprintf("(%s, %.1f GPU-hours in flight; the pending nodes go least first)", plural(n.GPUPods, "GPU pod"), n.GPUWork/3600)
}
