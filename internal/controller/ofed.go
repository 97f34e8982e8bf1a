package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
	"github.com/gpufleet/gpufleet/internal/netop"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The OFED driver of a rollout with spec.ofed (planner/ofed.go decides;
// this reads and acts). The Network Operator's OFED pods (label
// v1alpha1.LabelOFEDDriverPod) are in a cache of their own, as the
// manager's holds the GPU driver pods alone (one label selector cannot
// pick both): trimmed to what is read here, indexed by node. Nothing
// watches it: what a pass waits for on the OFED side shows on the node
// too (the Network Operator's upgrade state and mofed.wait labels), and
// nodes are watched.

// newOFEDPodCache is that cache.
func newOFEDPodCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts cache.Options) (cache.Cache, error) {
	req, err := labels.NewRequirement(v1alpha1.LabelOFEDDriverPod, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("OFED pod cache: %w", err)
	}
	opts.Scheme = scheme
	opts.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*req), Transform: trimDriverPod}}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("OFED pod cache: %w", err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, indexPodNode, podNode); err != nil {
		return nil, fmt.Errorf("OFED pod cache: index by node: %w", err)
	}
	return c, nil
}

// ofedPod is what a pass reads of a node's OFED pod.
type ofedPod struct {
	version string
	ready   bool
	failed  bool
	// readySince is when the pod last became Ready; zero when it is not.
	readySince time.Time
}

// ofedPods reads the OFED pods of the cluster, by node: for each node the
// pod not being deleted (the newest, should there be two for a moment),
// its version the image tag of its OFEDContainer.
func (r *Reconciler) ofedPods(ctx context.Context) (map[string]ofedPod, error) {
	var pods corev1.PodList
	var err error
	if r.OFEDPods != nil {
		err = r.OFEDPods.List(ctx, &pods, client.HasLabels{v1alpha1.LabelOFEDDriverPod}, client.UnsafeDisableDeepCopy)
	} else {
		err = r.apiReader().List(ctx, &pods, client.HasLabels{v1alpha1.LabelOFEDDriverPod})
	}
	if err != nil {
		return nil, fmt.Errorf("list OFED pods: %w", err)
	}
	out := map[string]ofedPod{}
	newest := map[string]time.Time{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		if t, ok := newest[p.Spec.NodeName]; ok && !p.CreationTimestamp.After(t) {
			continue
		}
		newest[p.Spec.NodeName] = p.CreationTimestamp.Time
		o := ofedPod{version: containerTag(p, v1alpha1.OFEDContainer), ready: podReady(p), failed: podFailed(p)}
		if o.ready {
			o.readySince = readySince(p)
		}
		out[p.Spec.NodeName] = o
	}
	return out, nil
}

// containerTag is the image tag of pod p's container name ("" without one).
func containerTag(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return imageref.Tag(c.Image)
		}
	}
	return ""
}

// readySince is when pod p's Ready condition last turned True.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// observeOFED fills in node n's OFED side from its OFED pod, and, where
// GPUDirect RDMA is used, whether its GPU driver pod is older than the
// OFED it runs on (planner.Node.DriverStale). The planner reads that of a
// pending node (which it does not settle Done with a stale driver) and of
// one installing or rolling back: a pass over a fleet at rest looks up no
// node's pods for it.
func (r *Reconciler) observeOFED(ctx context.Context, ro *v1alpha1.DriverRollout, n *planner.Node, pod ofedPod) error {
	n.OFEDVersion, n.OFEDReady, n.OFEDFailed = pod.version, pod.ready, pod.failed
	switch n.Phase {
	case "", v1alpha1.NodePending, v1alpha1.NodeInstalling, v1alpha1.NodeRollingBack:
	default:
		return nil
	}
	if !ro.Spec.OFED.Peermem || pod.readySince.IsZero() {
		return nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{indexPodNode: n.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list pods on node %s: %w", n.Name, err)
	}
	n.DriverStale = driverOlderThan(pods.Items, r.driverPods(), pod.readySince)
	return nil
}

// driverOlderThan reports whether a GPU driver pod (not being deleted) has
// run since before t: its driver container started before it. Not the
// pod's creation: with GPUDirect RDMA the driver pod's init waits for the
// node's OFED, so a pod created before OFED was Ready starts its driver
// after it. The peermem container is left out, as it restarts by itself.
// Stale by netop.DriverStale, the rule nodesim and the simulator play.
func driverOlderThan(pods []corev1.Pod, sel labels.Selector, t time.Time) bool {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if r := cs.State.Running; r != nil && cs.Name != v1alpha1.PeermemContainer && netop.DriverStale(r.StartedAt.Time, t) {
				return true
			}
		}
	}
	return false
}

// restartDriver evicts the GPU driver pods of a node (planner
// Transition.RestartDriver): their DaemonSet makes new ones, which load
// nvidia_peermem against the OFED the node runs now. An eviction rather
// than a delete: the controller evicts pods anyway, and needs no right to
// delete any pod of the cluster for this.
func (r *Reconciler) restartDriver(ctx context.Context, node string) error {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{indexPodNode: node}); err != nil {
		return fmt.Errorf("list driver pods on node %s: %w", node, err)
	}
	sel := r.driverPods()
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.Client.SubResource("eviction").Create(ctx, p, ev); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("restart driver pod %s/%s on node %s: %w", p.Namespace, p.Name, node, err)
		}
	}
	return nil
}

// ofedMarks writes a transition's OFED hold or release on the node. A
// release of a cordoned node (every one: the maintenance cordoned it)
// writes the Network Operator's record that it was cordoned when its
// upgrade began, in the same write: the operator records that itself only
// when it first marks the node upgrade-required, which for a held node
// was before the maintenance cordoned it, and without the record it would
// uncordon the node at the end of the OFED swap, before the GPU driver's.
func ofedMarks(n *corev1.Node, t planner.Transition) {
	switch {
	case t.HoldOFED:
		n.Labels[v1alpha1.LabelOFEDUpgradeSkip] = "true"
	case t.ReleaseOFED:
		delete(n.Labels, v1alpha1.LabelOFEDUpgradeSkip)
		if n.Spec.Unschedulable {
			n.Annotations[v1alpha1.AnnotationOFEDInitialUnschedulable] = "true"
		}
	}
}

// ofedPolicy is the OFED version the cluster's NicClusterPolicy names
// (planner.Snapshot.OFEDPolicy); empty when there is none, or no such
// kind, as then nothing is known to wait for.
func (r *Reconciler) ofedPolicy(ctx context.Context) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nicClusterPolicyGVK)
	err := r.apiReader().Get(ctx, client.ObjectKey{Name: nicClusterPolicyName}, u)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get NicClusterPolicy %s: %w", nicClusterPolicyName, err)
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "ofedDriver", "version")
	return v, nil
}

// nicClusterPolicyGVK is the Network Operator's NicClusterPolicy, of which
// it reconciles the one named nicClusterPolicyName.
var nicClusterPolicyGVK = schema.GroupVersionKind{Group: "mellanox.com", Version: "v1alpha1", Kind: "NicClusterPolicy"}

const nicClusterPolicyName = "nic-cluster-policy"
