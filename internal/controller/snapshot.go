package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Field indexes the controller registers on its cache.
const (
	indexPodNode   = "spec.nodeName"
	indexEventNode = "involvedObject.nodeName"
)

// observation is one pass's view of the cluster: the planner's snapshot and
// what the actuator needs besides (the node objects, the pods to evict).
type observation struct {
	snap planner.Snapshot
	// nodes are the cache's own objects, not copies (a pass over 5,000
	// nodes spent most of its time copying them): read them, and
	// DeepCopy one before changing it, as transitionNode and releaseNode
	// do.
	nodes map[string]*corev1.Node
	// evict are, per node being drained whose pods this pass read, the
	// pods still to evict.
	evict map[string][]corev1.Pod
	// dra is the pass's reading of dynamic resource allocation; nil where
	// the cluster serves none.
	dra *draView
	// orphans are nodes naming a rollout that no longer exists.
	orphans []*corev1.Node
}

// observe builds the planner's snapshot of ro's cluster at now.
func (r *Reconciler) observe(ctx context.Context, ro *v1alpha1.DriverRollout, now time.Time) (*observation, error) {
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	peers, err := r.peers(ctx, ro, nodes)
	if err != nil {
		return nil, err
	}
	obs := &observation{
		snap:  planner.Snapshot{Rollout: ro, Nodes: make([]planner.Node, 0, len(nodes)), Others: peers.others},
		nodes: make(map[string]*corev1.Node, len(nodes)),
		evict: map[string][]corev1.Pod{},
	}
	sel, err := nodeSelector(ro)
	if err != nil {
		// The planner reports the bad selector in the status; observe the
		// nodes anyway so it can.
		sel = labels.Nothing()
	}
	var work []int
	var draining []string
	for _, node := range nodes {
		obs.nodes[node.Name] = node
		n := observeNode(node, ro.Name, now)
		if peers.gone[n.Owner] {
			// Its rollout was deleted without releasing it (someone
			// removed the finalizer): release it first, as that
			// finalizer would have, then it is free.
			obs.orphans = append(obs.orphans, node)
		}
		if sel.Matches(labels.Set(node.Labels)) {
			work = append(work, len(obs.snap.Nodes))
			if n.Phase == v1alpha1.NodeDraining {
				draining = append(draining, node.Name)
			}
		}
		obs.snap.Nodes = append(obs.snap.Nodes, n)
	}
	// Claims and slices first: which pods hold a GPU depends on them.
	if obs.dra, err = r.readDRA(ctx, &ro.Spec); err != nil {
		return nil, err
	}
	claims := obs.dra.claimsOrNil()
	// The pods of draining nodes come from the API server: read them all
	// at once rather than one node after the other.
	read, err := r.readDrains(ctx, ro, draining, claims, now)
	if err != nil {
		return nil, err
	}
	// What starting each pending node would cost (planner.Node.GPUWork):
	// the GPU pods of the cache, read once for all of them.
	gpu, err := r.gpuWork(ctx, obs.snap.Nodes, work, claims, now)
	if err != nil {
		return nil, err
	}
	var ofed map[string]ofedPod
	if ro.Spec.OFED != nil {
		if ofed, err = r.ofedPods(ctx); err != nil {
			return nil, err
		}
		// The planner reads the policy's version only while the rollout
		// moves OFED: at rest no pass asks the API server for it.
		if ro.Spec.OFED.Moves() {
			if obs.snap.OFEDPolicy, err = r.ofedPolicy(ctx); err != nil {
				return nil, err
			}
		}
	}
	for _, i := range work {
		n := &obs.snap.Nodes[i]
		if w, ok := gpu[n.Name]; ok {
			n.GPUPods, n.GPUWork = w.pods, w.seconds
		}
		if ofed != nil {
			if err := r.observeOFED(ctx, ro, n, ofed[n.Name]); err != nil {
				return nil, err
			}
		}
		if err := r.observeWork(ctx, ro, obs.nodes[n.Name], n, obs, read, now); err != nil {
			return nil, err
		}
		if err := r.observeDRA(ctx, ro, obs.nodes[n.Name], n, obs.dra); err != nil {
			return nil, err
		}
	}
	return obs, nil
}

// listNodes returns every node the cache holds, the cache's own objects
// (read them, never change them). Under a manager it reads the node
// informer's store in place: a list through the cache client copies every
// node into a NodeList, a fifth of a pass over 5,000 nodes.
func (r *Reconciler) listNodes(ctx context.Context) ([]*corev1.Node, error) {
	if r.nodeStore != nil {
		objs := r.nodeStore.List()
		out := make([]*corev1.Node, 0, len(objs))
		for _, o := range objs {
			n, ok := o.(*corev1.Node)
			if !ok {
				// Never plan from a view that silently lacks nodes.
				return nil, fmt.Errorf("list nodes: the node cache holds a %T", o)
			}
			out = append(out, n)
		}
		return out, nil
	}
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// observeWork fills in what a node's phase waits for: pods to drain, the
// driver pod, the reported version, health signals. Nodes not being worked
// on need none of it, which keeps a pass over a big idle fleet cheap.
// read holds the pods of the draining nodes read in this pass.
func (r *Reconciler) observeWork(ctx context.Context, ro *v1alpha1.DriverRollout, node *corev1.Node, n *planner.Node, obs *observation, read map[string][]corev1.Pod, now time.Time) error {
	n.DriverVersion = node.Labels[v1alpha1.LabelGFDDriverFull]
	phase := n.Phase
	if phase == "" || phase == v1alpha1.NodePending || phase == v1alpha1.NodeDone ||
		phase == v1alpha1.NodeRolledBack || phase == v1alpha1.NodeQuarantined {
		return nil
	}
	if phase == v1alpha1.NodeDraining {
		// A node whose pods were read less than DrainRetry ago stays
		// undrained until the next read (drainPods).
		if left, ok := read[node.Name]; ok {
			n.Drained = len(left) == 0
			obs.evict[node.Name] = left
		}
		return nil
	}
	// The cache holds the driver pods (and only those), by node; they are
	// only read here.
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{indexPodNode: node.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list pods on node %s: %w", node.Name, err)
	}
	switch phase {
	case v1alpha1.NodeInstalling, v1alpha1.NodeValidating:
		n.DriverReady, n.DriverFailed = driverState(pods.Items, r.driverPods(), ro.Spec.TargetVersion)
	case v1alpha1.NodeRollingBack:
		n.DriverReady, n.DriverFailed = driverState(pods.Items, r.driverPods(), ro.Spec.PreviousVersion)
	case v1alpha1.NodeSoaking:
		n.DriverReady, n.DriverFailed = driverState(pods.Items, r.driverPods(), ro.Spec.TargetVersion)
		sigs, err := r.signals(ctx, ro, node, n.Since, now)
		if err != nil {
			return err
		}
		n.Signals = sigs
	}
	return nil
}

func nodeSelector(ro *v1alpha1.DriverRollout) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(&ro.Spec.NodeSelector)
}

// peerView is what the other DriverRollouts of the cluster mean for one
// pass: the planner's peers, and the rollouts that nodes name as their
// owner but that no longer exist.
type peerView struct {
	others []planner.Peer
	gone   map[string]bool
}

// peers lists the cluster's other DriverRollouts for the planner. A node
// naming a rollout the cache does not hold is not taken for free on the
// cache's word, which may simply lag behind a rollout just created: only a
// read from the API server that finds no such rollout makes it so.
func (r *Reconciler) peers(ctx context.Context, ro *v1alpha1.DriverRollout, nodes []*corev1.Node) (peerView, error) {
	var list v1alpha1.DriverRolloutList
	if err := r.Client.List(ctx, &list); err != nil {
		return peerView{}, fmt.Errorf("list rollouts: %w", err)
	}
	v := peerView{gone: map[string]bool{}}
	known := map[string]bool{ro.Name: true}
	for i := range list.Items {
		o := &list.Items[i]
		known[o.Name] = true
		if o.Name == ro.Name {
			continue
		}
		v.others = append(v.others, planner.Peer{
			Name: o.Name, Created: o.CreationTimestamp.Time,
			Deleting: !o.DeletionTimestamp.IsZero(), NodeSelector: o.Spec.NodeSelector,
		})
	}
	for i := range nodes {
		owner := nodes[i].Labels[v1alpha1.LabelRollout]
		if owner == "" || known[owner] {
			continue
		}
		known[owner] = true
		err := r.apiReader().Get(ctx, client.ObjectKey{Name: owner}, &v1alpha1.DriverRollout{})
		switch {
		case apierrors.IsNotFound(err):
			v.gone[owner] = true
		case err != nil:
			return peerView{}, fmt.Errorf("get rollout %s, named by node %s: %w", owner, nodes[i].Name, err)
		}
	}
	return v, nil
}

// observeNode reads a node's state and the progress recorded on it. The
// owner and the admin-cordon mark are facts about the node, read whoever
// recorded them; progress recorded by another rollout is left out: for this
// rollout the node has not started. A phase without a readable start time
// starts now, so its timeouts run from the first pass that sees it rather
// than firing at once.
func observeNode(node *corev1.Node, rollout string, now time.Time) planner.Node {
	state := v1alpha1.NodeStateOf(node.Labels, node.Annotations)
	n := planner.Node{
		Name:          node.Name,
		Labels:        node.Labels,
		Unschedulable: node.Spec.Unschedulable,
		Ready:         planner.NodeReady(node),
		Owner:         state.Rollout,
		AdminCordoned: state.AdminCordoned,
	}
	if n.Owner != rollout {
		return n
	}
	n.Phase, n.Failed, n.Since = state.Phase, state.Failed, state.Since
	if n.Since.IsZero() {
		n.Since = now
	}
	return n
}

// podsToDrain returns the pods that keep a node from being drained under
// spec: those that hold a GPU (planner.HoldsGPU), or with spec.evict.mode
// All every pod, except DaemonSet pods (the driver among them: they must
// stay), mirror pods (the kubelet owns them) and pods that have finished.
// A pod already being deleted still counts until it is gone, because its
// containers may still hold the GPU.
//
// claims tells which claims hold a GPU (planner.HoldsGPU); nil, any claim
// does.
func podsToDrain(pods []corev1.Pod, spec *v1alpha1.DriverRolloutSpec, claims planner.Claims) []corev1.Pod {
	all := planner.EvictModeOf(spec) == v1alpha1.EvictAll
	sel := planner.GPUPodSelector(spec)
	var out []corev1.Pod
	for _, p := range pods {
		if skipDrain(&p) || !all && !planner.HoldsGPU(&p, sel, claims) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func skipDrain(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// waitingFailures are container waiting reasons that mean a driver pod
// will not come up by itself.
var waitingFailures = []string{
	"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError",
	"CreateContainerError", "RunContainerError", "InvalidImageName",
}

// driverState reports whether the node's driver pod for version is Ready,
// and whether it failed to install. A driver pod is one sel matches; its
// Ready condition covers every container, the GPUDirect RDMA sidecar
// (v1alpha1.PeermemContainer) where the pod has one. A pod
// known to be of another version does not count, so the old driver's pod
// lingering for a moment after the label flip is not taken for the new one:
// its node selector names another driver version (the DaemonSet of another
// NVIDIADriver), or its image tag starts with another version.
func driverState(pods []corev1.Pod, sel labels.Selector, version string) (ready, failed bool) {
	for i := range pods {
		p := &pods[i]
		if !sel.Matches(labels.Set(p.Labels)) || p.DeletionTimestamp != nil {
			continue
		}
		if v, ok := p.Spec.NodeSelector[v1alpha1.LabelDriver]; ok && v != version {
			continue
		}
		if v := podDriverVersion(p); v != "" && !planner.DriverMatches(v, version) {
			continue
		}
		if podFailed(p) {
			failed = true
			continue
		}
		if podReady(p) {
			ready = true
		}
	}
	if ready {
		failed = false
	}
	return ready, failed
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podFailed(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && slices.Contains(waitingFailures, w.Reason) {
			return true
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && s.RestartCount > 0 {
			return true
		}
	}
	return false
}

// podDriverVersion is the driver version a driver pod's image tag names,
// or "" when no tag names one (a precompiled driver's "570-5.15.0-…").
func podDriverVersion(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if v := v1alpha1.DriverTagVersion(imageref.Tag(c.Image)); v != "" {
			return v
		}
	}
	return ""
}
