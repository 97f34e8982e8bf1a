package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The DRA kubelet plugin on a node, and what one pass knows of a node's
// dynamic resource allocation (planner.Node.DRA and its neighbours).

// draView is one pass's reading of the cluster's dynamic resource
// allocation: nil where the API server serves none.
type draView struct {
	claims *claimView
	slices *sliceView
}

// readDRA reads the claims and slices of the cluster for spec.
func (r *Reconciler) readDRA(ctx context.Context, spec *v1alpha1.DriverRolloutSpec) (*draView, error) {
	sl, err := r.readSlices(ctx, spec)
	if err != nil || sl == nil {
		return nil, err
	}
	cl, err := r.readClaims(ctx, spec, sl.pools)
	if err != nil || cl == nil {
		return nil, err
	}
	return &draView{claims: cl, slices: sl}, nil
}

// claims is the pass's claims for planner.HoldsGPU; nil when unread.
func (v *draView) claimsOrNil() planner.Claims {
	if v == nil {
		return nil
	}
	return v.claims.claims()
}

// observeDRA fills in node n's dynamic resource allocation: whether it
// runs the DRA plugin, the GPU claims still held there, the driver
// versions its slices publish, and its ComputeDomain. The plugin pod is
// read (from the API server, by node) only where a step waits for it: a
// drained node, and a validating one.
func (r *Reconciler) observeDRA(ctx context.Context, ro *v1alpha1.DriverRollout, node *corev1.Node, n *planner.Node, v *draView) error {
	if v != nil {
		n.DRA = v.slices.nodes[n.Name]
		n.DRAClaims = v.claims.held[n.Name]
		n.DRASliceVersions = v.slices.versions[n.Name]
	}
	if node.Labels[v1alpha1.LabelDRAPlugin] != "" {
		n.DRA = true
	}
	if d := ro.Spec.MaintenanceDomain; d != nil && d.NodeLabel == v1alpha1.LabelComputeDomain {
		n.ComputeDomain = computeDomainOfNode(node, n, v)
	}
	switch {
	case n.Phase == v1alpha1.NodeDraining && n.Drained, n.Phase == v1alpha1.NodeValidating:
	default:
		return nil
	}
	running, ready, err := r.pluginOn(ctx, &ro.Spec, node.Name)
	if err != nil {
		return err
	}
	n.DRAPluginRunning, n.DRAPluginReady = running, ready
	n.DRA = n.DRA || running
	return nil
}

// computeDomainOfNode is the ComputeDomain node belongs to for the
// planner: the one recorded when its maintenance began, while it is this
// rollout's and past Pending; else that of the channel claims allocated on
// it; else its ComputeDomain label.
func computeDomainOfNode(node *corev1.Node, n *planner.Node, v *draView) string {
	if ph := n.Phase.OrPending(); ph != v1alpha1.NodePending {
		if d := node.Annotations[v1alpha1.AnnotationComputeDomain]; d != "" {
			return d
		}
	}
	if v != nil {
		if d := v.claims.domains[n.Name]; d != "" {
			return d
		}
	}
	return node.Labels[v1alpha1.LabelComputeDomain]
}

// pluginOn reads the DRA kubelet plugin pods on node (spec.dra's plugin
// selector): whether one is there, terminating or not, and whether one is
// Ready.
func (r *Reconciler) pluginOn(ctx context.Context, spec *v1alpha1.DriverRolloutSpec, node string) (running, ready bool, err error) {
	sel, err := metav1.LabelSelectorAsSelector(v1alpha1.DRAKubeletPluginSelectorOf(spec))
	if err != nil {
		return false, false, fmt.Errorf("spec.dra.kubeletPluginSelector: %w", err)
	}
	var pods corev1.PodList
	anyVersion := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	if err := r.apiReader().List(ctx, &pods, client.MatchingLabelsSelector{Selector: sel}, client.MatchingFields{indexPodNode: node}, anyVersion); err != nil {
		return false, false, fmt.Errorf("list DRA kubelet plugin pods on node %s: %w", node, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		running = true
		ready = ready || p.DeletionTimestamp == nil && podReady(p)
	}
	return running, ready, nil
}

// draWaiting reports whether node n, as planned, waits in a DRA step that
// nothing the controller watches will end (claims released, the plugin
// gone or Ready, slices republished): the pass then comes back after
// DrainRetry.
func draWaiting(n planner.Node, phase v1alpha1.NodePhase) bool {
	if !n.DRA {
		return false
	}
	switch phase {
	case v1alpha1.NodeDraining:
		return n.Drained || len(n.DRAClaims) > 0
	case v1alpha1.NodeValidating:
		return true
	}
	return false
}

// draMarks writes what transition t does to the node's DRA kubelet plugin
// (v1alpha1.LabelDRAPlugin) and records its ComputeDomain
// (v1alpha1.AnnotationComputeDomain) on n.
func draMarks(n *corev1.Node, t planner.Transition) {
	switch t.Plugin {
	case planner.PluginPause:
		n.Labels[v1alpha1.LabelDRAPlugin] = v1alpha1.DRAPluginPaused
	case planner.PluginResume:
		n.Labels[v1alpha1.LabelDRAPlugin] = v1alpha1.DRAPluginResumed
	case planner.PluginRelease:
		delete(n.Labels, v1alpha1.LabelDRAPlugin)
	}
	if t.ComputeDomain != "" {
		n.Annotations[v1alpha1.AnnotationComputeDomain] = t.ComputeDomain
	}
}
