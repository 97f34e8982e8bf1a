package planner

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Compact returns snap with the nodes left out whose only part in a pass is
// to be counted, for a caller that plans one large pool many times over (the
// simulator plans 50,000 nodes at every simulated minute): the pass then
// costs what the nodes in flight cost, not what the pool does.
// Plan(Compact(snap, buf), now) decides exactly what Plan(snap, now) does,
// transitions, status and next check alike (TestCompactPlansTheSame, and
// package sim's TestCompactSimulatesTheSame over whole rollouts).
//
// snap.Nodes must be in name order (Plan sorts them otherwise, and which
// pending nodes Compact keeps depends on it). buf is reused for the nodes
// kept. What is left out, and why it cannot matter:
//
//   - Done nodes of this rollout, not failed, Ready and schedulable, and not
//     canary nodes: nothing moves a Done node but an abort, and such a node
//     is not unavailable, not a failure, and no canary result.
//   - free Pending nodes (no owner, no progress), not failed, Ready and
//     schedulable, not on the target driver, not canary nodes, beyond the
//     first parallelNodes of them in the order a pass takes them (name
//     order, or the cheapest first where a pending node holds GPU pods:
//     startOrder): a pass starts at most parallelNodes nodes, so it never
//     reaches those. Those it leaves out that hold GPU pods are counted
//     (Settled.PendingBusy), so that the pass still orders by cost. On
//     the gpufleet actuator they must carry a driver label, and where the
//     spec names pools a pool label: a pass joins every node without one
//     (join.go), however many.
//
// On the gpu-operator actuator both must also carry the operator's skip
// label (else the pass holds them); a Done node must not be in one of the
// operator's upgrades (it would take a slot), and a Pending one must be
// marked upgrade-required (else it is not one the pass could release).
//
// Only a pass where nothing else can make those nodes matter is compacted;
// otherwise snap comes back as it is: no
// maintenance domain (a domain starts with every pending node of it), no
// OFED driver (every node is held, and a pending node's OFED decides
// whether it needs a maintenance; not compacted yet), no
// abort (it moves Done nodes), no
// other rollout (it may go first on a free node), no outOfService selector,
// a node selector that parses, and the canary nodes known (the status or
// the spec names them, or there is no canary) and, when the status names
// them, all still selected, as choosing them looks at every node.
func Compact(snap Snapshot, buf []Node) Snapshot {
	var c Compactor
	return c.compact(snap, nil, buf)
}

// A Compactor compacts the snapshots of one pool planned pass after pass,
// as Compact does, looking again only at the nodes that changed since its
// last call: a pass then costs a few bytes per node of the pool.
type Compactor struct {
	key     compactKey
	classes []nodeClass
	seen    []int
	// cheapest are the free pending nodes kept, by index (cheapestFree).
	cheapest []int
}

// Compact is Compact(snap, buf) for a caller that also passes each node's
// version: versions[i] must change whenever anything of snap.Nodes[i]
// changes that Compact reads (readiness, cordon, failure and admin-cordon
// marks, owner, phase and its start, labels, driver version), and
// snap.Nodes must hold the same nodes in the same (name) order from call
// to call. A change of the rollout Compact depends on makes it look at
// every node again. A node's GPU pods and work need no new version: they
// only order the free pending nodes, which every call does again.
func (c *Compactor) Compact(snap Snapshot, versions []int, buf []Node) Snapshot {
	return c.compact(snap, versions, buf)
}

// nodeClass is what Compact found of one node.
type nodeClass uint8

const (
	// classKept: planned with.
	classKept nodeClass = iota
	// classDone: a Done node left out.
	classDone
	// classFree: a free Pending node, left out beyond the first
	// parallelNodes of them.
	classFree
)

// compactKey is what a node's class depends on besides the node.
type compactKey struct {
	rollout, target, selector, canary string
	operator, pools                   bool
}

func (c *Compactor) compact(snap Snapshot, versions []int, buf []Node) Snapshot {
	spec := &snap.Rollout.Spec
	if snap.Settled != (Settled{}) || spec.Abort || len(snap.Others) > 0 || len(spec.OutOfService) > 0 || spec.MaintenanceDomain != nil || spec.OFED != nil {
		return snap
	}
	canary := snap.Rollout.Status.Canary.Nodes
	if len(canary) == 0 {
		canary = spec.Canary.Nodes
	}
	if len(canary) == 0 && spec.Canary.Count != nil && *spec.Canary.Count > 0 {
		return snap
	}
	sel, err := metav1.LabelSelectorAsSelector(&spec.NodeSelector)
	if err != nil {
		return snap
	}
	operator := v1alpha1.ActuatorOf(spec) == v1alpha1.ActuatorGPUOperator
	pools := len(spec.Pools) > 0
	key := compactKey{rollout: snap.Rollout.Name, target: spec.TargetVersion, selector: spec.NodeSelector.String(), canary: strings.Join(canary, ","), operator: operator, pools: pools}
	n := len(snap.Nodes)
	// Every node is classified again unless the caller tracks versions and
	// nothing the classes depend on changed.
	fresh := versions == nil || len(versions) != n || key != c.key || len(c.classes) != n
	if fresh {
		c.key = key
		c.classes = slices.Grow(c.classes[:0], n)[:n]
		if versions != nil {
			c.seen = slices.Grow(c.seen[:0], n)[:n]
		}
	}
	cl := classifier{rollout: snap.Rollout.Name, target: spec.TargetVersion, canary: canary, operator: operator, pools: pools,
		matches: equalityMatcher(&spec.NodeSelector, sel, true)}
	for i := range snap.Nodes {
		if fresh || versions[i] != c.seen[i] {
			c.classes[i] = cl.class(&snap.Nodes[i])
			if versions != nil {
				c.seen[i] = versions[i]
			}
		}
	}

	keep := int(spec.ParallelNodes)
	if keep < 1 {
		keep = v1alpha1.DefaultParallelNodes
	}
	c.cheapest = c.cheapestFree(snap.Nodes, keep)
	out := buf[:0]
	var settled Settled
	next := 0 // into c.cheapest, in index order
	for i, class := range c.classes {
		switch class {
		case classDone:
			settled.Done++
			continue
		case classFree:
			if next == len(c.cheapest) || c.cheapest[next] != i {
				settled.Pending++
				if snap.Nodes[i].GPUPods > 0 {
					settled.PendingBusy++
				}
				continue
			}
			next++
		}
		out = append(out, snap.Nodes[i])
	}
	if len(canary) > 0 {
		// A canary node named (by the status or the spec) that is not in
		// the pool is replaced (markCanary), which looks at every node:
		// plan them all.
		found := 0
		for k := range out {
			if slices.Contains(canary, out[k].Name) && cl.matches(labels.Set(out[k].Labels)) {
				found++
			}
		}
		if found < len(canary) {
			return snap
		}
	}
	snap.Nodes, snap.Settled = out, settled
	return snap
}

// cheapestFree returns the indices of the first keep free pending nodes
// in the order a pass takes pending nodes (startOrder: no GPU pod first,
// then the least GPU work, ties in the nodes' order), in index order. It
// keeps them sorted by that order while it looks, so a node that does not
// beat the last of them costs one comparison: a pool of idle nodes, or a
// busy one, costs a pass one look at each node.
func (c *Compactor) cheapestFree(nodes []Node, keep int) []int {
	best := c.cheapest[:0]
	less := func(a, b int) bool { // a before b in startOrder
		pa, pb := min(nodes[a].GPUPods, 1), min(nodes[b].GPUPods, 1)
		if pa != pb {
			return pa < pb
		}
		if wa, wb := nodes[a].GPUWork, nodes[b].GPUWork; wa != wb {
			return wa < wb
		}
		return a < b
	}
	for i, class := range c.classes {
		if class != classFree {
			continue
		}
		if len(best) == keep {
			// The nodes come in index order, so one no cheaper than the
			// last kept is after it: the common case, said first.
			if l := &nodes[best[keep-1]]; l.GPUPods == 0 || nodes[i].GPUPods > 0 && nodes[i].GPUWork >= l.GPUWork {
				continue
			}
			best = best[:keep-1]
		}
		k, _ := slices.BinarySearchFunc(best, i, func(e, t int) int {
			if less(e, t) {
				return -1
			}
			return 1
		})
		best = slices.Insert(best, k, i)
	}
	slices.Sort(best)
	return best
}

// classifier decides nodes' classes for one rollout.
type classifier struct {
	rollout, target string
	canary          []string
	// operator: the gpu-operator actuator's rules too.
	operator bool
	// pools: the spec names pools, so a node without a pool label may be
	// joined to one.
	pools   bool
	matches func(labels.Set) bool
	// A pool's nodes share their driver version string: decided once.
	lastVersion  string
	lastOnTarget bool
	decided      bool
}

func (cl *classifier) class(n *Node) nodeClass {
	if !n.Ready || n.Unschedulable || n.AdminCordoned || n.Failed || slices.Contains(cl.canary, n.Name) {
		return classKept
	}
	state := ""
	if cl.operator {
		if n.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" {
			return classKept
		}
		state = n.Labels[v1alpha1.LabelOperatorUpgradeState]
	}
	switch ph := n.Phase.OrPending(); {
	case ph == v1alpha1.NodeDone && n.Owner == cl.rollout && !v1alpha1.OperatorUpgrading(state) && cl.matches(labels.Set(n.Labels)):
		return classDone
	case ph == v1alpha1.NodePending && n.Owner == "" && n.Since.IsZero() && (!cl.operator || state == v1alpha1.OperatorStateUpgradeRequired) &&
		(cl.operator || hasDriverLabel(n)) && (!cl.pools || hasPoolLabel(n)) && cl.matches(labels.Set(n.Labels)):
		if !cl.decided || n.DriverVersion != cl.lastVersion {
			cl.lastVersion, cl.lastOnTarget, cl.decided = n.DriverVersion, DriverMatches(n.DriverVersion, cl.target), true
		}
		if !cl.lastOnTarget {
			return classFree
		}
	}
	return classKept
}

// hasDriverLabel reports whether the node carries a driver label (see join).
func hasDriverLabel(n *Node) bool {
	_, ok := n.Labels[v1alpha1.LabelDriver]
	return ok
}

// hasPoolLabel reports whether the node carries a pool label (see join).
func hasPoolLabel(n *Node) bool {
	_, ok := n.Labels[v1alpha1.LabelPool]
	return ok
}
