package simcheck

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// The DRA rules, recomputed from the nodes: a DRA node's plugin is stopped
// in the middle of its drain, by a move that changes nothing else, only
// once its GPU pods are gone and no GPU claim is held there; and its
// driver label moves to the target only once the plugin is stopped and
// gone.

// draSelfMove reports whether t is a DRA node's plugin stopped mid-drain,
// and checks that it may be: the node was drained, with no claim held.
func (c *Checker) draSelfMove(s sim.Step, t planner.Transition) bool {
	if t.From != v1alpha1.NodeDraining || t.To != v1alpha1.NodeDraining || t.Plugin != planner.PluginPause {
		return false
	}
	if t.Driver != "" || t.Cordon || t.Uncordon || t.Failure || t.Quarantine {
		c.fail(s, "%s: stopping its DRA plugin moved more (driver %q, cordon %t, uncordon %t)", t.Node, t.Driver, t.Cordon, t.Uncordon)
	}
	for i := range s.Before {
		if b := &s.Before[i]; b.Name == t.Node && (!b.Drained || len(b.DRAClaims) > 0) {
			c.fail(s, "%s: its DRA plugin stopped while drained=%t, claims held %v", t.Node, b.Drained, b.DRAClaims)
		}
	}
	return true
}

// draSwapRule checks that a DRA node's driver label moves to the target
// only with its plugin stopped and gone and no claim held.
func (c *Checker) draSwapRule(s sim.Step, t planner.Transition) {
	if t.From != v1alpha1.NodeDraining || t.Driver != s.Rollout.Spec.TargetVersion {
		return
	}
	for i := range s.Before {
		b := &s.Before[i]
		if b.Name != t.Node || !b.DRA && b.Labels[v1alpha1.LabelDRAPlugin] == "" {
			continue
		}
		if len(b.DRAClaims) > 0 || b.DRAPluginRunning || b.Labels[v1alpha1.LabelDRAPlugin] != v1alpha1.DRAPluginPaused {
			c.fail(s, "%s: driver label moved to %s with claims %v held, plugin running %t, plugin label %q",
				t.Node, t.Driver, b.DRAClaims, b.DRAPluginRunning, b.Labels[v1alpha1.LabelDRAPlugin])
		}
	}
}
