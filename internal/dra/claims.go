package dra

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// AllocatedNode is the node claim c is allocated on, as its allocation's
// node selector names it (the scheduler writes matchFields metadata.name In
// [node] for a node-local device); empty when it is not allocated or its
// selector names no one node.
func AllocatedNode(c *resourcev1.ResourceClaim) string {
	a := c.Status.Allocation
	if a == nil || a.NodeSelector == nil {
		return ""
	}
	for _, term := range a.NodeSelector.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
