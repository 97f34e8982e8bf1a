package render

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/lifecycle"
)

// lifecycleObjects is the lifecycle step: the cluster's DriverRollout, named
// after the release it rolls out, covering every GPU node of the cluster.
//
// Note: one rollout per cluster, over all its GPU nodes, is how render keeps
// its promise never to write two DriverRollouts that select the same node: a
// rollout per pool would need selectors proven disjoint. A release change
// writes the rollout under a new name; Flux applies it and prunes the old
// one, and for the moment both exist the controller gives each node to one
// (the old one keeps its nodes until its finalizer releases them, and the
// new one reports the Overlap condition meanwhile).
func lifecycleObjects(p clusterPlan) ([]object, error) {
	return []object{{file: "driverrollout.yaml", obj: driverRolloutOf(p)}}, nil
}

// driverRolloutOf builds the cluster's DriverRollout: the one builder of
// both render and `gpufleet simulate` (see DriverRollout).
func driverRolloutOf(p clusterPlan) *v1alpha1.DriverRollout {
	dr := lifecycle.DriverRolloutFor(p.rollout.Name, p.policy, p.rollout.Driver, p.rollbackTo.Driver, map[string]string{v1alpha1.LabelGPUPresent: "true"})
	dr.Labels = releaseLabels(p, p.rollout.Name)
	if p.approved {
		// The in-cluster canary passes only when spec.approval names the
		// rollout: `gpufleet approve RELEASE/CLUSTER` (or the wave's
		// approval) is the one way to approve at both levels.
		dr.Spec.Approval = dr.Name
	}
	if p.policy.Actuator != v1alpha1.DefaultActuator {
		dr.Spec.Actuator = p.policy.Actuator
	}
	dr.Spec.Paused = p.paused
	dr.Spec.Abort = p.abort
	dr.Spec.Pools = rolloutPools(p.cluster)
	dr.Spec.OFED = ofedRollout(p)
	return dr
}

// ofedRollout is the DriverRollout's OFED driver: the rollout release's
// ofed-driver, falling back to the one of the release it rolls back to, on
// a cluster with a pool of managed NICs; nil where the rollout's release
// names none or no pool manages NICs, and the rollout leaves OFED alone.
//
// The previous version follows the GPU driver's (the release rolled back
// to) and is the target itself where that release names no OFED driver:
// such a release leaves the NicClusterPolicy as it was (see
// nicClusterPolicy), so render knows no older version to go back to.
//
// The rollout spans every GPU node of the cluster, so peermem (a GPU
// driver pod loaded before its node's OFED is restarted after it) is set
// where any pool uses GPUDirect RDMA: a stale nvidia_peermem breaks that
// pool's multi-node jobs, while restarting a driver pod without it costs a
// node already drained nothing but the reload. A driver pod is validated
// with its peermem container wherever the pool's NVIDIADriver gave it one
// (its Ready condition covers every container).
func ofedRollout(p clusterPlan) *v1alpha1.OFEDSpec {
	if p.rollout.OFEDDriver == "" || !p.cluster.ManagesNICs() {
		return nil
	}
	previous := p.rollbackTo.OFEDDriver
	if previous == "" {
		previous = p.rollout.OFEDDriver
	}
	peermem := false
	for _, pool := range p.cluster.Pools {
		peermem = peermem || pool.GPUDirectRDMA
	}
	o := &v1alpha1.OFEDSpec{TargetVersion: p.rollout.OFEDDriver, PreviousVersion: previous, Peermem: peermem}
	// Where some pool's NICs are not the Network Operator's, its nodes
	// have no OFED pod: the rollout selects the OFED nodes as the
	// NicClusterPolicy does, and leaves the others' OFED alone.
	if slices.ContainsFunc(p.cluster.Pools, func(pool *fleet.Pool) bool { return !pool.ManagedNICs }) {
		o.NodeSelectors = nicPoolSelectors(p.cluster)
	}
	return o
}

// rolloutPools are the pools whose nodes the NVIDIADrivers tell apart by
// the pool label (those that share a GPU product with another pool of the
// cluster), each with what tells its nodes apart: the product and the MIG
// layout (nvidia.com/mig.config, which a node's template or an admin sets
// to ask mig-manager for it); a pool without MIG is the product's nodes
// with none of the others' layouts. The controller gives a joining node
// without a pool label the one pool that matches it. Pools of one product
// that their layouts do not tell apart are left out: their nodes need the
// pool label from whoever creates them.
func rolloutPools(c *fleet.Cluster) []v1alpha1.PoolSpec {
	var out []v1alpha1.PoolSpec
	for _, pool := range c.Pools {
		if !sharesProduct(c, pool) {
			continue
		}
		layout := migLayout(pool)
		var others []string
		distinct := true
		for _, o := range c.Pools {
			if o == pool || o.Product != pool.Product {
				continue
			}
			if migLayout(o) == layout {
				distinct = false
			}
			if l := migLayout(o); l != "" {
				others = append(others, l)
			}
		}
		if !distinct {
			continue
		}
		sel := metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelGFDProduct: pool.Product}}
		if layout != "" {
			sel.MatchLabels[v1alpha1.LabelMIGConfig] = layout
		} else {
			slices.Sort(others)
			sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: v1alpha1.LabelMIGConfig, Operator: metav1.LabelSelectorOpNotIn, Values: others}}
		}
		out = append(out, v1alpha1.PoolSpec{Name: pool.Name, NodeSelector: sel})
	}
	return out
}

// migLayout is a pool's MIG layout, "" for none (all-disabled is none).
func migLayout(p *fleet.Pool) string {
	if p.MIG == "all-disabled" {
		return ""
	}
	return p.MIG
}
