package planner

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Joining nodes (the gpufleet actuator). Render's NVIDIADrivers select the
// nodes by their driver label (v1alpha1.LabelDriver), so a node without
// one gets no driver at all: a node an autoscaler or a provisioning
// template just created, a repaired node that came back without its
// labels, or a node of a fleet adopted from a GPU Operator that never knew
// the label. The planner labels every such node of the rollout at once,
// whatever the windows, freezes, pause, slots or maxUnavailable say: the
// label moves nothing that runs, and a node without a driver has no GPU
// work to disrupt. The label says:
//
//   - the driver the node reports (GPU Feature Discovery), when it runs
//     one: what runs keeps running, and the rollout moves the node later
//     under the policy like any other;
//   - otherwise the driver the cluster should run now (joinVersion): the
//     rollout's target once its canary passed and was approved (or there
//     is no canary), the previous version before that, after an abort, or
//     when the failure budget is spent. A new node never gets a driver the
//     canary has not proven.
//
// The join is one move, Pending → Pending, with the node's resourceVersion
// like every other, so the rollout takes the node as it labels it. It
// never touches a node another rollout owns or goes first on, a
// quarantined node, a node out of service (spec.outOfService: someone else
// is working on it; it joins when that ends), or a node's cordon (move
// records an admin's cordon).
//
// A node joined on the target installs it by itself, so start leaves it
// alone while its driver comes up (joinWait): it settles Done once it
// reports the target. One whose driver has not come up by then is started
// like any other node, so the policy's failure handling (rollback,
// quarantine, the budget) applies to it.

// join labels the selected pending nodes that carry no driver label, or no
// pool label where the spec's pools tell one from another.
//
// On the gpu-operator actuator no NVIDIADriver selects by the driver label
// (the operator's DaemonSet installs a new node's driver by itself), so a
// join there only gives the pool label, where pools share a product.
func (p *planner) join() {
	pools := p.poolSelectors()
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.phase != v1alpha1.NodePending || w.elsewhere != "" || w.outOfService {
			continue
		}
		pool := pools.missing(w.n)
		_, labelled := w.n.Labels[v1alpha1.LabelDriver]
		needDriver := !p.operator() && !labelled
		if !needDriver && pool == "" || p.quarantineMarked(w) || p.holding(w.n.Name) {
			continue
		}
		var what []string
		version, why := "", ""
		if needDriver {
			version, why = p.joinVersion(w)
			what = append(what, fmt.Sprintf("labelled %s (%s)", version, why))
		}
		if pool != "" {
			what = append(what, "in pool "+pool+" (the one pool whose selector it matches)")
		}
		reason := "joined without a driver label: " + strings.Join(what, ", ")
		if version == "" {
			reason = "joined without a pool label: " + strings.Join(what, ", ")
		}
		p.move(w, v1alpha1.NodePending, reason, func(t *Transition) {
			t.Driver, t.Pool = version, pool
			t.Join = true
		})
		w.joined = true
	}
}

// poolSet are the spec's pools with their parsed selectors.
type poolSet []struct {
	name string
	sel  labels.Selector
}

// poolSelectors parses the spec's pools; a pool whose selector does not
// parse selects nothing.
func (p *planner) poolSelectors() poolSet {
	var out poolSet
	for i := range p.spec.Pools {
		sel, err := metav1.LabelSelectorAsSelector(&p.spec.Pools[i].NodeSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		out = append(out, struct {
			name string
			sel  labels.Selector
		}{p.spec.Pools[i].Name, sel})
	}
	return out
}

// missing names the pool a node without a pool label is to be given: "" when
// it has one, or when none or several pools match it.
func (ps poolSet) missing(n *Node) string {
	if _, ok := n.Labels[v1alpha1.LabelPool]; ok || len(ps) == 0 {
		return ""
	}
	return ps.of(n.Labels)
}

// of names the one pool whose selector matches a node's labels; "" when
// none or several do (the node is left for someone to label).
func (ps poolSet) of(l map[string]string) string {
	found := ""
	for _, pool := range ps {
		if !pool.sel.Matches(labels.Set(l)) {
			continue
		}
		if found != "" {
			return ""
		}
		found = pool.name
	}
	return found
}

// joinVersion is the driver a node without a driver label is labelled
// with, and why: see the package's joining rule above.
func (p *planner) joinVersion(w *work) (version, why string) {
	target, previous := p.spec.TargetVersion, p.spec.PreviousVersion
	if reported := w.n.DriverVersion; reported != "" {
		switch {
		case DriverMatches(reported, target):
			return target, "it runs " + reportedAs(reported, target)
		case DriverMatches(reported, previous):
			return previous, "it runs " + reportedAs(reported, previous)
		}
		return reported, "it runs " + reported + ", which the rollout moves to " + target + " under its policy"
	}
	ok, reason := p.targetProven()
	if ok {
		return target, "no driver yet; " + reason
	}
	return previous, "no driver yet; " + reason
}

// targetProven reports whether a node that joins with no driver gets the
// rollout's target, and says why (or why not).
func (p *planner) targetProven() (bool, string) {
	target := p.spec.TargetVersion
	if target == p.spec.PreviousVersion {
		return true, "the cluster's driver"
	}
	switch cs := p.canaryState(); {
	case p.spec.Abort:
		return false, "the rollout to " + target + " is aborted"
	case p.failures() > p.set.FailureBudget:
		return false, "the rollout to " + target + " spent its failure budget"
	case cs == v1alpha1.CanaryFailed:
		return false, "the canary failed on " + target
	case cs == v1alpha1.CanaryNone:
		return true, "the rollout has no canary"
	case cs != v1alpha1.CanaryPassed:
		return false, "the canary has not proven " + target + " yet"
	case !p.approved() && !p.spec.Canary.AutoApproveAfterSoak:
		return false, "the canary passed but is not approved"
	}
	return true, "the canary proved " + target
}

// quarantineMarked reports whether a node carries the spec's quarantine
// label (a node a rollout quarantined and that was released since keeps
// it until someone looks at it).
func (p *planner) quarantineMarked(w *work) bool {
	marks := p.spec.Quarantine.Labels
	if len(marks) == 0 {
		return w.n.Labels[v1alpha1.LabelQuarantined] == "true"
	}
	for k, v := range marks {
		if got, ok := w.n.Labels[k]; ok && got == v {
			return true
		}
	}
	return false
}

// joinWait reports whether a pending node was joined in this pass, or is
// one this rollout joined on its target and whose driver is still coming
// up: start leaves it alone until the install and validate timeouts have
// passed since the join, and asks to be woken then.
func (p *planner) joinWait(w *work) bool {
	if w.joined {
		return true // joined in this pass: its one write is made
	}
	if w.phase != v1alpha1.NodePending || w.n.Owner != p.ro.Name || w.n.Since.IsZero() ||
		w.n.Labels[v1alpha1.LabelDriver] != p.spec.TargetVersion || DriverMatches(w.n.DriverVersion, p.spec.TargetVersion) {
		return false
	}
	deadline := w.n.Since.Add(p.set.InstallTimeout + p.set.ValidateTimeout)
	if !p.now.Before(deadline) {
		return false
	}
	p.wake(deadline)
	return true
}
