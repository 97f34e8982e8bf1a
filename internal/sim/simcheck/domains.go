package simcheck

import (
	"slices"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// The maintenance domain rules (spec.maintenanceDomain), recomputed from the
// nodes' labels rather than from the planner's grouping: a pass that starts
// a node of a domain starts every pending node of it; no node of a domain
// goes back into service while another is in flight; and at the end no
// domain is half on each driver. maxUnavailable and parallelNodes count a
// domain's nodes as they count any node (Step).

// domainsOf groups the rollout's own nodes (those not left to another
// rollout) by the value of the rollout's domain label; nil when it names
// none.
func domainsOf(ro *v1alpha1.DriverRollout, others []planner.Peer, nodes []planner.Node) map[string][]*planner.Node {
	d := ro.Spec.MaintenanceDomain
	if d == nil {
		return nil
	}
	out := map[string][]*planner.Node{}
	v := see(ro, others, nil, nodes)
	for _, n := range v.selected {
		key := domainKeyOf(d.NodeLabel, n)
		if key == "" || leftTo(ro, others, n) != "" {
			continue
		}
		out[key] = append(out[key], n)
	}
	return out
}

// domainKeyOf is node n's domain under the domain label: its value, or for
// NVIDIA's ComputeDomain label the ComputeDomain the node was observed in
// (its claims or recorded start), which the label gives way to.
func domainKeyOf(label string, n *planner.Node) string {
	if label == v1alpha1.LabelComputeDomain && n.ComputeDomain != "" {
		return n.ComputeDomain
	}
	return n.Labels[label]
}

// domainRules checks one pass. A pass one of whose writes was refused ends
// there, so what it left undone is the next pass's to finish: the start and
// return rules look only at passes written whole.
func (c *Checker) domainRules(s sim.Step) {
	label := ""
	if d := s.Rollout.Spec.MaintenanceDomain; d != nil {
		label = d.NodeLabel
	}
	if label == "" || s.Refused > 0 {
		return
	}
	after := domainsOf(s.Rollout, s.Others, s.After)
	started, returned := map[string]string{}, map[string]string{}
	for _, t := range s.Result.Transitions {
		key := ""
		for _, n := range s.After {
			if n.Name == t.Node {
				key = domainKeyOf(label, &n)
				break
			}
		}
		if key == "" {
			continue
		}
		switch {
		case t.From == v1alpha1.NodePending && t.To == v1alpha1.NodeDraining:
			started[key] = t.Node
		case t.To == v1alpha1.NodeDone && t.From != v1alpha1.NodePending, t.To == v1alpha1.NodeRolledBack:
			returned[key] = t.Node
		}
	}
	for key, first := range started {
		for _, n := range after[key] {
			if n.Phase == "" || n.Phase == v1alpha1.NodePending {
				c.fail(s, "%s of maintenance domain %s started, but %s of it stays Pending", first, key, n.Name)
			}
		}
	}
	wasPending := map[string]bool{}
	for i := range s.Before {
		if ph := s.Before[i].Phase; ph == "" || ph == v1alpha1.NodePending {
			wasPending[s.Before[i].Name] = true
		}
	}
	for key, first := range returned {
		for _, n := range after[key] {
			// A node that starts in the pass its domain returns in (one
			// that joined it too late to catch up) goes alone, after it.
			if n.Phase.InFlight() && !wasPending[n.Name] {
				c.fail(s, "%s of maintenance domain %s went back into service while %s of it is %s", first, key, n.Name, n.Phase)
			}
		}
	}
}

// finalDomains checks the end of a run: no domain has a node Done on the
// target beside one rolled back or quarantined.
func (c *Checker) finalDomains(ro *v1alpha1.DriverRollout, nodes []planner.Node) {
	s := sim.Step{Rollout: ro}
	for key, ns := range domainsOf(ro, nil, nodes) {
		done := slices.IndexFunc(ns, func(n *planner.Node) bool { return n.Phase == v1alpha1.NodeDone })
		back := slices.IndexFunc(ns, func(n *planner.Node) bool {
			return n.Phase == v1alpha1.NodeRolledBack || n.Phase == v1alpha1.NodeQuarantined
		})
		if done >= 0 && back >= 0 {
			c.fail(s, "maintenance domain %s ended half upgraded: %s Done, %s %s", key, ns[done].Name, ns[back].Name, ns[back].Phase)
		}
	}
}
