package rehearse

import (
	"fmt"
	"maps"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// nodes are the simulated GPU nodes of cluster c on driver version: its
// pools' nodes, or Options.Nodes nodes of its first pool's product named
// gpu-NN, labelled as a real cluster's are (gpuNodeLabels) and, where the
// policy names a maintenance domain, grouped into domains (inDomains).
func (o Options) nodes(c *fleet.Cluster, p fleet.Policy, version string) []planner.Node {
	if o.Nodes > 0 {
		return inDomains(sim.Nodes(o.Nodes, "gpu", gpuNodeLabels(c, nil), version), "gpu", p)
	}
	var nodes []planner.Node
	for _, pool := range c.Pools {
		nodes = append(nodes, inDomains(sim.Nodes(pool.Nodes, pool.Name, gpuNodeLabels(c, pool), version), pool.Name, p)...)
	}
	return nodes
}

// gpuNodeLabels are the labels a node of pool carries in a real cluster:
// those GPU Feature Discovery sets and the pool label render selects by.
// A nil pool is a node of Options.Nodes: the cluster's first pool's product.
func gpuNodeLabels(c *fleet.Cluster, pool *fleet.Pool) map[string]string {
	l := map[string]string{v1alpha1.LabelGPUPresent: "true"}
	if pool == nil && len(c.Pools) > 0 {
		pool = c.Pools[0]
	}
	if pool != nil {
		l[v1alpha1.LabelGFDProduct] = pool.Product
		l[v1alpha1.LabelPool] = pool.Name
	}
	return l
}

// domainLabel is the node label whose values are the policy's maintenance
// domains; empty when it names none.
func domainLabel(p fleet.Policy) string {
	if p.DomainSize < 1 {
		return ""
	}
	return p.MaintenanceDomain
}

// inDomains groups one pool's nodes into the policy's maintenance domains
// as GPU Feature Discovery labels them (nvidia.com/gpu.clique on an NVL72
// rack): each DomainSize consecutive nodes share a value of the domain
// label, "<pool>-domain-<k>", the last domain perhaps smaller. Without the
// label the planner takes every node for a domain of its own, and the
// rehearsal would not show what the policy's domains cost. A domain never
// spans two pools, as an NVLink domain never spans two racks.
//
// The nodes of one domain share one label map: the simulator copies a
// node's labels before it changes them (sim.Nodes shares one map too).
func inDomains(nodes []planner.Node, pool string, p fleet.Policy) []planner.Node {
	label := domainLabel(p)
	if label == "" {
		return nodes
	}
	var l map[string]string
	for i := range nodes {
		if i%p.DomainSize == 0 {
			l = maps.Clone(nodes[i].Labels)
			l[label] = fmt.Sprintf("%s-domain-%d", pool, i/p.DomainSize)
		}
		nodes[i].Labels = l
	}
	return nodes
}
