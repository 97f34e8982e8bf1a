package planner

import (
	"fmt"
	"slices"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Maintenance domains (spec.maintenanceDomain): the selected nodes that
// share a value of a node label, an NVLink/IMEX domain, are maintained as
// one unit. A job spans every node of such a domain, so taking its nodes
// one at a time would interrupt that job once per node; taken together it
// is interrupted once. The rules, each where the planner decides it:
//
//   - start (fillDomain): every pending node of the domain starts in the
//     same pass, or none does. The domain takes one parallelNodes slot per
//     node and counts its nodes against maxUnavailable; it waits while one
//     of its nodes is NotReady or out of service. A pending node of a
//     domain already on its way (one that joined it, or one a refused write
//     left behind) starts at once, to catch up: the domain's return waits
//     for it. A domain that rolled back starts no more of its nodes.
//   - canary (expandCanary): the canary is whole domains.
//   - failure (progress): a node that fails rolls back its domain: every
//     other node of it in flight, or Done already (a node that joined the
//     domain after it returned fails alone), goes back to the previous
//     driver too, not counted against the failure budget: they did not fail.
//   - return (holdsReturn, returnHeld): no node of a domain goes back into
//     service, Done or rolled back, while another is still on its way; the
//     last one to finish releases them all in the same pass.
//
// A node without the label is a domain of its own, and planning is then
// what it is without domains.

// domain is one maintenance domain of a pass: its nodes, by index into
// planner.nodes (this rollout's nodes only: one left to another rollout is
// not the rollout's to move and only counts as unavailable).
type domain struct {
	key   string
	nodes []int
	// failing names the node that fails the domain in this pass, with its
	// reason; empty when none does.
	failing, why string
	// tried: fill has decided on the domain in this pass.
	tried bool
	// gpuPods and gpuWork sum its pending nodes' (startOrder).
	gpuPods int
	gpuWork float64
}

// domainLabel is the node label whose values are the domains; empty when
// the rollout names none.
func (p *planner) domainLabel() string {
	if d := p.spec.MaintenanceDomain; d != nil {
		return d.NodeLabel
	}
	return ""
}

// indexDomains groups the pass's nodes by domain. Nothing is allocated
// unless the rollout names a domain label.
func (p *planner) indexDomains() {
	label := p.domainLabel()
	if label == "" {
		return
	}
	p.domains = map[string]*domain{}
	for i := range p.nodes {
		w := &p.nodes[i]
		key := p.domainKey(w)
		if key == "" || w.elsewhere != "" {
			continue
		}
		d := p.domains[key]
		if d == nil {
			d = &domain{key: key}
			p.domains[key] = d
		}
		d.nodes = append(d.nodes, i)
		if w.phase == v1alpha1.NodePending {
			d.gpuPods += w.n.GPUPods
			d.gpuWork += w.n.GPUWork
		}
	}
}

// domainOf is the domain of node w; nil for a node of no domain.
func (p *planner) domainOf(w *work) *domain {
	if p.domains == nil || w.elsewhere != "" {
		return nil
	}
	key := p.domainKey(w)
	if key == "" {
		return nil
	}
	return p.domains[key]
}

// domainKey is the domain node w belongs to; empty for none. A rollout
// whose domain label is NVIDIA's ComputeDomain label
// (v1alpha1.LabelComputeDomain) groups its nodes by ComputeDomain as the
// controller observed it (Node.ComputeDomain: recorded at the start of a
// maintenance, else from the channel claims allocated on the node, else
// from the label): the label and the claims go with the workloads the
// drain evicts, and the domain must hold until its last node is back.
func (p *planner) domainKey(w *work) string {
	label := p.domainLabel()
	if label == v1alpha1.LabelComputeDomain && w.n.ComputeDomain != "" {
		return w.n.ComputeDomain
	}
	return w.n.Labels[label]
}

// computeDomains: the maintenance domains are ComputeDomains.
func (p *planner) computeDomains() bool { return p.domainLabel() == v1alpha1.LabelComputeDomain }

// domainProblem refuses a maintenance domain on the gpu-operator actuator,
// as the schema does: the operator's upgrade controller drains, validates
// and uncordons each node by itself, so no domain could return as one.
func domainProblem(spec *v1alpha1.DriverRolloutSpec) string {
	if spec.MaintenanceDomain == nil || v1alpha1.ActuatorOf(spec) != v1alpha1.ActuatorGPUOperator {
		return ""
	}
	return fmt.Sprintf("spec.maintenanceDomain needs the %s actuator: on %s the operator's upgrade controller returns each node to service by itself, so a domain could not return as one unit",
		v1alpha1.DefaultActuator, v1alpha1.ActuatorGPUOperator)
}

// expandCanary makes the canary whole domains: every node that could be a
// canary node (see pickCanary) in the domain of a canary node becomes one.
func (p *planner) expandCanary() {
	if p.domains == nil {
		return
	}
	for _, d := range p.domains {
		if !slices.ContainsFunc(d.nodes, func(i int) bool { return p.nodes[i].canary }) {
			continue
		}
		for _, i := range d.nodes {
			if w := &p.nodes[i]; !w.canary && w.phase == v1alpha1.NodePending && !p.onTarget(w) {
				w.canary = true
			}
		}
	}
}

// scanDomains decides, before any node moves in this pass, which domains
// fail now: a node of theirs fails, or failed in an earlier pass whose
// rollback of the others did not get written.
func (p *planner) scanDomains() {
	for _, d := range p.domains {
		for _, i := range d.nodes {
			w := &p.nodes[i]
			switch {
			case w.phase == v1alpha1.NodeRollingBack && w.failed && d.failing == "":
				d.failing, d.why = w.n.Name, "failed"
			case forward(w.phase) && d.failing == "":
				if why := p.failure(w); why != "" {
					d.failing, d.why = w.n.Name, why
				}
			}
		}
	}
}

// rolledBackDomain reports whether w's domain fails in this pass or rolled
// back (a node of it rolling back, rolled back or quarantined): settle then
// leaves w, already on the target, Pending rather than Done, as Done would
// leave the domain half on each driver; fillDomain says why it waits.
func (p *planner) rolledBackDomain(w *work) bool {
	d := p.domainOf(w)
	if d == nil {
		return false
	}
	if d.failing != "" {
		return true
	}
	for _, i := range d.nodes {
		switch p.nodes[i].phase {
		case v1alpha1.NodeRollingBack, v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined:
			return true
		}
	}
	return false
}

// forward: a node in phase p is on its way to the new driver.
func forward(p v1alpha1.NodePhase) bool {
	return p.InFlight() && p != v1alpha1.NodeRollingBack
}

// rollBackWithDomain rolls back w, on its way to the new driver or Done on
// it, because another node of its domain failed: a domain is never left
// half on each driver. It reports whether it did.
func (p *planner) rollBackWithDomain(w *work) bool {
	d := p.domainOf(w)
	if d == nil || d.failing == "" || d.failing == w.n.Name || w.moved || !(forward(w.phase) || w.phase == v1alpha1.NodeDone) {
		return false
	}
	from := w.phase
	p.move(w, v1alpha1.NodeRollingBack, fmt.Sprintf("node %s of maintenance domain %s %s while this one was %s; the domain rolls back as one, to %s",
		d.failing, d.key, d.why, from, p.spec.PreviousVersion), func(t *Transition) {
		t.Driver = p.spec.PreviousVersion
		t.Cordon = !w.unschedulable
	})
	return true
}

// holdsReturn reports whether w, ready to go back into service, waits for
// the rest of its domain: another node of it is in flight and not ready to
// return (or was moved in this pass, to a phase it has not begun), or
// another is sent back in this pass (the domain fails, or the rollout is
// aborted). It reads
// the pass's running view: a node an earlier step of the pass took out of
// flight no longer holds the others (and returnHeld looks again at those
// held before that step).
func (p *planner) holdsReturn(w *work) bool {
	d := p.domainOf(w)
	if d == nil {
		return false
	}
	for _, i := range d.nodes {
		m := &p.nodes[i]
		switch {
		case m == w:
		case (p.spec.Abort || d.failing != "" && m.n.Name != d.failing) && !m.moved && (forward(m.phase) || m.phase == v1alpha1.NodeDone):
			// It is sent back later in this pass.
			return true
		case m.phase.InFlight() && (m.moved || !p.readyToReturn(m)):
			return true
		}
	}
	return false
}

// returnHeld returns the nodes held back in this pass (holdsReturn) whose
// domain no longer holds them, once every node has had its step: the last
// node of a domain to finish may come after the others in the pass's
// order, and nothing else would wake the held ones.
func (p *planner) returnHeld() {
	if p.domains == nil {
		return
	}
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.moved || w.elsewhere != "" || !p.readyToReturn(w) || p.domainOf(w) == nil {
			continue
		}
		switch w.phase {
		case v1alpha1.NodeSoaking:
			p.soaking(w)
		case v1alpha1.NodeRollingBack:
			p.rollingBack(w)
		}
	}
}

// readyToReturn reports whether node w, in flight, goes back into service
// in this pass unless its domain holds it: soaked clean, or back on the
// previous driver.
func (p *planner) readyToReturn(w *work) bool {
	switch w.phase {
	case v1alpha1.NodeSoaking:
		return p.failure(w) == "" && !p.now.Before(w.n.Since.Add(p.set.Soak))
	case v1alpha1.NodeRollingBack:
		// Its OFED back (or kept, working) too: a node waiting for it is
		// not back.
		back, _ := p.ofed.back(w)
		return back && rolledBack(w, p.spec.PreviousVersion)
	}
	return false
}

// fillDomain decides on the domain of candidate w in a pass of fill: it
// starts every pending node of it, or none. It returns how many it started
// and how many more nodes are unavailable now, or why the domain waits
// (blocked: it can never start as it is; skip: not now).
func (p *planner) fillDomain(d *domain, canaryOnly bool, busy, unavailable int, out func(*work) bool, ready func(*work) readiness, start func(*work)) (started, cost int, wait string) {
	d.tried = true
	members := 0
	for _, i := range d.nodes {
		w := &p.nodes[i]
		switch {
		case w.phase == v1alpha1.NodeRollingBack:
			return 0, 0, fmt.Sprintf("maintenance domain %s: node %s rolling back", d.key, w.n.Name)
		case w.phase == v1alpha1.NodeRolledBack || w.phase == v1alpha1.NodeQuarantined:
			// Starting the rest would leave the domain half on each
			// driver.
			return 0, 0, fmt.Sprintf("maintenance domain %s rolled back (node %s %s): its other nodes stay on %s", d.key, w.n.Name, w.phase, p.spec.PreviousVersion)
		case w.phase != v1alpha1.NodePending:
			continue
		case w.canary != canaryOnly:
			continue
		case !w.n.Ready || w.outOfService:
			return 0, 0, fmt.Sprintf("maintenance domain %s: node %s NotReady or out of service, and the domain goes as one", d.key, w.n.Name)
		}
		if ready != nil && ready(w) != readyNow {
			return 0, 0, fmt.Sprintf("maintenance domain %s: node %s cannot start yet", d.key, w.n.Name)
		}
		members++
		if !out(w) {
			cost++
		}
	}
	if members == 0 {
		return 0, 0, ""
	}
	maxNodes := int(p.spec.MaintenanceDomain.MaxNodes)
	switch {
	case maxNodes > 0 && len(d.nodes) > maxNodes:
		return 0, 0, fmt.Sprintf("maintenance domain %s has %d nodes, more than maintenanceDomain.maxNodes %d: it does not start; correct maxNodes (and parallelNodes, maxUnavailable with it)", d.key, len(d.nodes), maxNodes)
	case members > p.set.Parallel:
		return 0, 0, fmt.Sprintf("maintenance domain %s: %d nodes to start as one, more than parallelNodes %d", d.key, members, p.set.Parallel)
	case cost > p.set.MaxUnavailable:
		return 0, 0, fmt.Sprintf("maintenance domain %s: %d nodes to take out as one, more than maxUnavailable %d", d.key, cost, p.set.MaxUnavailable)
	case busy+members > p.set.Parallel || unavailable+cost > p.set.MaxUnavailable:
		return 0, 0, "skip"
	}
	for _, i := range d.nodes {
		if w := &p.nodes[i]; w.phase == v1alpha1.NodePending && w.canary == canaryOnly {
			start(w)
		}
	}
	return members, cost, ""
}

// heldForDomains says which nodes, through, wait for the rest of their
// maintenance domain at the end of the pass (holdsReturn), for the status:
// "2 nodes through, held for maintenance domain nvl-3"; empty when none.
func (p *planner) heldForDomains() string {
	if p.domains == nil {
		return ""
	}
	n, key, several := 0, "", false
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.moved || w.elsewhere != "" || !w.phase.InFlight() || !p.readyToReturn(w) {
			continue
		}
		if d := p.domainOf(w); d != nil {
			n++
			several = several || (key != "" && d.key != key)
			if key == "" || d.key < key {
				key = d.key
			}
		}
	}
	switch {
	case n == 0:
		return ""
	case several:
		return fmt.Sprintf("%s through, held for the rest of their maintenance domains (%s among them)", plural(n, "node"), key)
	}
	return fmt.Sprintf("%s through, held for the rest of maintenance domain %s", plural(n, "node"), key)
}
