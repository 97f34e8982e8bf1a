package netopplay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/netop"
)

// PolicyName is the one NicClusterPolicy the Network Operator reads.
const PolicyName = "nic-cluster-policy"

// PolicyGVK is the NicClusterPolicy's kind (cluster-scoped).
var PolicyGVK = schema.GroupVersionKind{Group: "mellanox.com", Version: "v1alpha1", Kind: "NicClusterPolicy"}

// Options tune the player. Zero values take the defaults in brackets.
type Options struct {
	// Namespace is the Network Operator's namespace, where the OFED
	// DaemonSets run [fleet.DefaultNetworkOperatorNamespace].
	Namespace string
	// Resync is how often Run looks at the cluster [500ms].
	Resync time.Duration
	// Logf, when set, receives one line per change the player makes.
	Logf func(format string, args ...any)
}

// OFEDDaemonSetPlayer keeps the OFED DaemonSets and the mofed.wait node
// labels as the Network Operator would for the cluster's NicClusterPolicy
// (see the package doc for what it plays and what not).
type OFEDDaemonSetPlayer struct {
	c    client.Client
	opts Options
}

// NewOFEDDaemonSetPlayer returns a player that acts through c.
func NewOFEDDaemonSetPlayer(c client.Client, opts Options) *OFEDDaemonSetPlayer {
	if opts.Namespace == "" {
		opts.Namespace = fleet.DefaultNetworkOperatorNamespace
	}
	if opts.Resync == 0 {
		opts.Resync = 500 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &OFEDDaemonSetPlayer{c: c, opts: opts}
}

// Run syncs every Resync until ctx ends. Errors of a pass are logged and
// retried on the next: mostly conflicts with others writing the nodes.
func (p *OFEDDaemonSetPlayer) Run(ctx context.Context) error {
	tick := time.NewTicker(p.opts.Resync)
	defer tick.Stop()
	for {
		if err := p.Sync(ctx); err != nil && ctx.Err() == nil {
			p.opts.Logf("netopplay: %v (retrying)", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Sync does one pass: the DaemonSets the policy asks for, no others, and
// the nodes' wait labels.
func (p *OFEDDaemonSetPlayer) Sync(ctx context.Context) error {
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(PolicyGVK)
	err := p.c.Get(ctx, client.ObjectKey{Name: PolicyName}, policy)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("NicClusterPolicy %s: %w", PolicyName, err)
	}
	var want []*appsv1.DaemonSet
	if err == nil {
		if want, err = p.desired(ctx, policy); err != nil {
			return err
		}
	}
	return errors.Join(p.apply(ctx, want), p.syncWaitLabels(ctx))
}

// ofedSpec is the part of spec.ofedDriver played here.
type ofedSpec struct {
	Image      string `json:"image"`
	Repository string `json:"repository"`
	Version    string `json:"version"`
}

// desired returns the OFED DaemonSets policy asks for: none without
// spec.ofedDriver, else one per OS release and kernel of the nodes with a
// Mellanox NIC.
func (p *OFEDDaemonSetPlayer) desired(ctx context.Context, policy *unstructured.Unstructured) ([]*appsv1.DaemonSet, error) {
	raw, found, err := unstructured.NestedMap(policy.Object, "spec", "ofedDriver")
	if err != nil || !found {
		return nil, err
	}
	var ofed ofedSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ofed); err != nil {
		return nil, fmt.Errorf("NicClusterPolicy %s: spec.ofedDriver: %w", PolicyName, err)
	}
	var extra struct {
		NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity,omitempty"`
		Tolerations  []corev1.Toleration  `json:"tolerations,omitempty"`
	}
	if spec, ok := policy.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &extra); err != nil {
			return nil, fmt.Errorf("NicClusterPolicy %s: spec: %w", PolicyName, err)
		}
	}
	nodes := &corev1.NodeList{}
	if err := p.c.List(ctx, nodes, client.MatchingLabels{v1alpha1.LabelNFDMellanoxPCI: "true"}); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	seen := map[nodePool]bool{}
	var out []*appsv1.DaemonSet
	for _, n := range nodes.Items {
		np := nodePool{os: n.Labels[v1alpha1.LabelNFDOSID], osVersion: n.Labels[v1alpha1.LabelNFDOSVersion], kernel: n.Labels[v1alpha1.LabelNFDKernel], arch: n.Labels[corev1.LabelArchStable]}
		if np.os == "" || np.osVersion == "" || np.kernel == "" || np.arch == "" || seen[np] {
			continue
		}
		seen[np] = true
		ds := daemonSet(p.opts.Namespace, np, ofed, extra.NodeAffinity, extra.Tolerations)
		ds.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: PolicyGVK.GroupVersion().String(), Kind: PolicyGVK.Kind, Name: policy.GetName(), UID: policy.GetUID(),
			Controller: new(true), BlockOwnerDeletion: new(true),
		}}
		out = append(out, ds)
	}
	slices.SortFunc(out, func(a, b *appsv1.DaemonSet) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// nodePool is the operator's grouping of nodes: one DaemonSet each.
type nodePool struct{ os, osVersion, kernel, arch string }

// kernelHash is the operator's short, deterministic name for a kernel
// (its getStringHash: FNV-1a, printed, then made safe for names).
func kernelHash(kernel string) string {
	h := fnv.New32a()
	h.Write([]byte(kernel))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// apply creates or updates the DaemonSets of want and deletes every other
// OFED DaemonSet of the namespace (a kernel no node runs any more, or a
// policy without ofedDriver).
func (p *OFEDDaemonSetPlayer) apply(ctx context.Context, want []*appsv1.DaemonSet) error {
	if len(want) > 0 {
		if err := p.ensureNamespace(ctx); err != nil {
			return err
		}
	}
	var errs []error
	keep := map[string]bool{}
	for _, ds := range want {
		keep[ds.Name] = true
		errs = append(errs, p.applyOne(ctx, ds))
	}
	list := &appsv1.DaemonSetList{}
	if err := p.c.List(ctx, list, client.InNamespace(p.opts.Namespace), client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
		return errors.Join(append(errs, fmt.Errorf("list OFED DaemonSets: %w", err))...)
	}
	for i := range list.Items {
		if ds := &list.Items[i]; !keep[ds.Name] {
			p.opts.Logf("netopplay: deleting OFED DaemonSet %s", ds.Name)
			if err := p.c.Delete(ctx, ds); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete DaemonSet %s: %w", ds.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// applyOne creates ds, or rewrites the template of the one there when it
// differs: with OnDelete, the pods keep the old template until deleted.
func (p *OFEDDaemonSetPlayer) applyOne(ctx context.Context, ds *appsv1.DaemonSet) error {
	cur := &appsv1.DaemonSet{}
	err := p.c.Get(ctx, client.ObjectKeyFromObject(ds), cur)
	if apierrors.IsNotFound(err) {
		p.opts.Logf("netopplay: creating OFED DaemonSet %s (%s)", ds.Name, ds.Spec.Template.Spec.Containers[0].Image)
		if err := p.c.Create(ctx, ds); err != nil {
			return fmt.Errorf("create DaemonSet %s: %w", ds.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("DaemonSet %s: %w", ds.Name, err)
	}
	// The API server fills defaults the wanted template leaves unset: only
	// what is set here is compared.
	if equality.Semantic.DeepDerivative(ds.Spec.Template, cur.Spec.Template) &&
		equality.Semantic.DeepDerivative(ds.Labels, cur.Labels) {
		return nil
	}
	p.opts.Logf("netopplay: updating OFED DaemonSet %s in place (%s)", ds.Name, ds.Spec.Template.Spec.Containers[0].Image)
	cur.Labels = ds.Labels
	cur.OwnerReferences = ds.OwnerReferences
	cur.Spec.Template = ds.Spec.Template
	if err := p.c.Update(ctx, cur); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update DaemonSet %s: %w", ds.Name, err)
	}
	return nil
}

// ensureNamespace creates the operator's namespace and the OFED pods'
// service account (the operator's state-ofed-driver has one; without it
// no pod is admitted).
func (p *OFEDDaemonSetPlayer) ensureNamespace(ctx context.Context) error {
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.opts.Namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: p.opts.Namespace}},
	} {
		if err := p.c.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			continue
		}
		if err := p.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// syncWaitLabels sets network.nvidia.com/operator.mofed.wait on every node
// with an OFED pod, as the operator's handleMOFEDWaitLabels: "false" when
// the pod's first container is Ready, else "true". A node whose pod is
// gone keeps the label it had until its next pod appears.
func (p *OFEDDaemonSetPlayer) syncWaitLabels(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := p.c.List(ctx, pods, client.InNamespace(p.opts.Namespace), client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
		return fmt.Errorf("list OFED pods: %w", err)
	}
	var errs []error
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == "" {
			continue
		}
		ready := len(pod.Status.ContainerStatuses) != 0 && pod.Status.ContainerStatuses[0].Ready
		errs = append(errs, p.setNodeLabel(ctx, pod.Spec.NodeName, v1alpha1.LabelMOFEDWait, netop.WaitLabel(ready)))
	}
	return errors.Join(errs...)
}

// setNodeLabel patches label key of node to value unless it has it.
func (p *OFEDDaemonSetPlayer) setNodeLabel(ctx context.Context, node, key, value string) error {
	n := &corev1.Node{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return client.IgnoreNotFound(err)
	}
	if v, ok := n.Labels[key]; ok && v == value {
		return nil
	}
	p.opts.Logf("netopplay: node %s: %s=%s", node, key, value)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	if err := p.c.Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("node %s: label %s: %w", node, key, err)
	}
	return nil
}
