package planner

import corev1 "k8s.io/api/core/v1"

// NodeReady says the node's Ready condition is True (a node without one,
// or with Unknown, is not Ready). It is gpufleet's one reading of
// readiness: the controller fills Node.Ready with it for the planner, and
// the gate, explain and the dashboard judge and draw nodes by it, so a
// node the planner counts unavailable is never Ready to them. It lives in
// the planner because that is the one package all of them import: the
// controller must not import the gate, which would link render and the
// fleet parser into gpufleet-controller.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady says the pod's Ready condition is True: the one reading of a
// driver pod's readiness for the packages that judge or wait for one.
// (The controller's own, in its snapshot, also asks for phase Running.)
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
