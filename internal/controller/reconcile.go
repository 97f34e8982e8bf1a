package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The controller's permissions, from which hack/generate-rbac.sh writes
// config/rbac/role.yaml. Least privilege: no Secrets, no wildcards; it
// writes only Nodes (labels, annotations, cordon, taint), evictions, Events
// and its own DriverRollouts; it reads ResourceClaims and ResourceSlices
// for the GPUs dynamic resource allocation hands out. The namespaced rules are for leader election:
// its lease, and the Events it records about the lease.
//
// +kubebuilder:rbac:groups=gpufleet.io,resources=driverrollouts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gpufleet.io,resources=driverrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gpufleet.io,resources=driverrollouts/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims;resourceslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=mellanox.com,resources=nicclusterpolicies,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=gpufleet-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=gpufleet-system

// Clock tells the time. The controller reads it once per pass and hands it
// to the planner; tests move it to open a maintenance window.
type Clock interface {
	Now() time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// EventRecorder records Kubernetes Events (events.k8s.io/v1); the
// controller-runtime manager's recorder is one.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Reconciler reconciles DriverRollouts.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server itself, past the cache: it
	// confirms that a rollout a node names is gone before the node is
	// taken for free. Client when nil.
	APIReader client.Reader
	// Clock defaults to the wall clock.
	Clock Clock
	// Recorder receives one Event per transition, with the planner's reason.
	Recorder EventRecorder
	// Metrics may be nil.
	Metrics *Metrics
	// Prometheus answers the plans' Prometheus health queries;
	// PrometheusHTTP when nil.
	Prometheus MetricsSource
	// DriverPods selects the GPU Operator's driver pods;
	// DefaultDriverPodSelector when nil.
	DriverPods labels.Selector
	// GPUPods reads the cluster's GPU pods, trimmed to the GPU work they
	// hold and indexed by node (newGPUPodCache), for the cost of starting
	// each pending node; nil, every node costs the same and the nodes go
	// in their own order.
	GPUPods client.Reader
	// OFEDPods reads the Network Operator's OFED pods (newOFEDPodCache),
	// for rollouts with spec.ofed; nil, they are read from the API server.
	OFEDPods client.Reader
	// DrainRetry is how soon a drain that still has pods is looked at again
	// (a PodDisruptionBudget may allow the next eviction); 5 s when zero.
	DrainRetry time.Duration
	// HealthPoll is how often a soaking node's Prometheus query runs; 30 s
	// when zero. Conditions and Events are watched, not polled.
	HealthPoll time.Duration
	// Version is this controller's version (a semantic version; anything
	// else, such as "(devel)", compares with nothing). It is written into
	// each rollout's status.controllerVersion, and a rollout whose status a
	// newer version wrote is left alone (see supersededBy): a controller
	// rolled back, by hand or with its release, never takes over state a
	// newer one may have written in a form it does not know.
	Version string

	// expect holds this controller's node writes the cache may not show
	// yet (see expectations).
	expect expectations
	// drainReads paces the reads of draining nodes' pods (see drainPods).
	drainReads drainReads
	// nodeStore is the manager's node informer store (SetupWithManager),
	// which listNodes reads in place; nil outside a manager, where it
	// lists through Client.
	nodeStore toolscache.Store
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader == nil {
		return r.Client
	}
	return r.APIReader
}

func (r *Reconciler) driverPods() labels.Selector {
	if r.DriverPods == nil {
		sel, _ := labels.Parse(DefaultDriverPodSelector)
		return sel
	}
	return r.DriverPods
}

func (r *Reconciler) prometheus() MetricsSource {
	if r.Prometheus == nil {
		return PrometheusHTTP{}
	}
	return r.Prometheus
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Reconcile runs one pass for a DriverRollout: observe the cluster, plan,
// act on each transition, drain the nodes being drained, and patch the
// status when it changed. It requeues for the planner's next wake time; a
// watched change (a node, a pod, a node Event, the rollout) brings it back
// sooner.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	logger := log.FromContext(ctx)

	// Get.
	ro := &v1alpha1.DriverRollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// Delete: release the nodes, then let the object go.
	if !ro.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, ro)
	}

	// Finalizer.
	if !controllerutil.ContainsFinalizer(ro, Finalizer) {
		base := ro.DeepCopy()
		controllerutil.AddFinalizer(ro, Finalizer)
		if err := r.Client.Patch(ctx, ro, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	if supersededBy(ro.Status.ControllerVersion, r.Version) {
		return ctrl.Result{}, r.superseded(ctx, ro)
	}

	// Patch the status on the way out when it changed, and only then: a
	// status written every pass would wake every watcher every pass.
	now := r.now()
	before := ro.DeepCopy()
	var plan *planner.Result
	defer func() {
		// A pass that stopped half way leaves the status as it was: the
		// planner's status describes every transition done, and
		// observedGeneration says the spec was fully acted on. The retry
		// writes it.
		if plan == nil || retErr != nil {
			return
		}
		st := plan.Status
		st.ControllerVersion = cmp.Or(r.Version, before.Status.ControllerVersion)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSuperseded)
		r.Metrics.observeStatus(ro, &st, int(ro.Spec.FailureBudget))
		if !equality.Semantic.DeepEqual(before.Status, st) {
			ro.Status = st
			if err := r.Client.Status().Patch(ctx, ro, client.MergeFrom(before)); err != nil {
				retErr = errors.Join(retErr, fmt.Errorf("patch status: %w", err))
				return
			}
			r.statusEvents(before, ro)
		}
		r.Metrics.passDone(ro.Name)
	}()

	// Observe and plan.
	obs, err := r.observe(ctx, ro, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(obs.orphans) > 0 {
		// Release them and plan from a view that shows them free: the
		// owner label moves only by being removed first (see
		// config/admission).
		if err := r.releaseOrphans(ctx, obs.orphans); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if node := r.expect.stale(obs.nodes, now); node != "" {
		// Planning from a view without our last write could start a node
		// twice or exceed maxUnavailable: wait for the cache.
		logger.V(1).Info("cache behind our last write; waiting", "node", node)
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	res := planner.Plan(obs.snap, now)
	plan = &res
	r.approvalEvent(before)

	// Act on each transition, in the planner's order. A failed write stops
	// the pass: the next one re-plans from what the cluster then says.
	for _, t := range res.Transitions {
		node := obs.nodes[t.Node]
		logger.Info("node transition", "node", t.Node, "from", t.From, "to", t.To, "reason", t.Reason)
		updated, err := r.actuate(ctx, ro, node, t, now)
		if apierrors.IsConflict(err) {
			// The node changed since the cache showed it: another rollout
			// or controller took it, or anyone wrote it. Nothing was done;
			// re-plan from a fresher view. The status stays as it was, as
			// it would describe transitions not made.
			logger.Info("node changed since it was read; planning again", "node", t.Node, "from", t.From, "to", t.To)
			plan = nil
			return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
		}
		if err != nil {
			r.Recorder.Eventf(ro, node, corev1.EventTypeWarning, "TransitionFailed", string(t.To), "node %s: %s → %s not done: %v", t.Node, t.From, t.To, err)
			return ctrl.Result{}, err
		}
		obs.nodes[t.Node] = updated
		if t.RestartDriver {
			// After the write that records it: a pass that stopped
			// between the two finds the driver pod still stale and
			// restarts it then.
			if err := r.restartDriver(ctx, t.Node); err != nil {
				return ctrl.Result{}, err
			}
		}
		r.expect.wrote(t.Node, updated.Annotations[v1alpha1.AnnotationSince], now)
		r.Metrics.transition(ro.Name, t)
		r.transitionEvent(ro, updated, t)
	}

	// Drain every node in Draining; a node that just started drains now.
	after := wakeAfter(res.NextCheck, now)
	soaking := false
	for _, n := range obs.snap.Nodes {
		phase := phaseAfter(n, res.Transitions)
		switch phase {
		case v1alpha1.NodeDraining:
			// A node that starts draining in this pass starts its wait for
			// jobs now.
			since := n.Since
			if n.Phase != v1alpha1.NodeDraining {
				since = now
			}
			d, err := r.drain(ctx, n.Name, since, obs)
			if err != nil {
				return ctrl.Result{}, err
			}
			if d.left > 0 {
				after = sooner(after, durationOr(r.DrainRetry, 5*time.Second))
			}
		case v1alpha1.NodeSoaking:
			soaking = true
		}
		if draWaiting(n, phase) {
			// Claims released, a plugin gone or back, slices
			// republished: nothing watched says so.
			after = sooner(after, durationOr(r.DrainRetry, 5*time.Second))
		}
	}
	if soaking && ro.Spec.Health.Prometheus != nil {
		after = sooner(after, durationOr(r.HealthPoll, 30*time.Second))
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// cacheLagRetry is how soon a pass that found the cache behind the
// controller's own writes runs again.
const cacheLagRetry = 100 * time.Millisecond

// phaseAfter is the node's phase once this pass's transitions are done.
func phaseAfter(n planner.Node, ts []planner.Transition) v1alpha1.NodePhase {
	phase := n.Phase
	for _, t := range ts {
		if t.Node == n.Name {
			phase = t.To
		}
	}
	return phase
}

// wakeAfter turns the planner's next check into a requeue delay. A little
// slack makes sure the deadline has passed when the pass runs.
func wakeAfter(next, now time.Time) time.Duration {
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), 0) + 50*time.Millisecond
}

// sooner returns the shorter of two delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// transitionEvent records the planner's decision on the rollout, naming
// the node, with the planner's reason sentence.
func (r *Reconciler) transitionEvent(ro *v1alpha1.DriverRollout, node *corev1.Node, t planner.Transition) {
	if t.Join {
		// Not a phase change: the node got the driver label it lacked.
		r.Recorder.Eventf(ro, node, corev1.EventTypeNormal, "NodeJoined", "LabelDriver", "node %s: %s", t.Node, t.Reason)
		return
	}
	typ := corev1.EventTypeNormal
	if t.Failure || t.Quarantine {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(ro, node, typ, "Node"+string(t.To), string(t.To), "node %s: %s", t.Node, t.Reason)
}

// statusEvents records a change of the rollout's phase with the message
// that explains it (why it stalled, what it waits for).
func (r *Reconciler) statusEvents(before, after *v1alpha1.DriverRollout) {
	if before.Status.Phase == after.Status.Phase {
		return
	}
	typ := corev1.EventTypeNormal
	if after.Status.Phase == v1alpha1.PhaseStalled || after.Status.Phase == v1alpha1.PhaseCompletedWithFailures {
		typ = corev1.EventTypeWarning
	}
	msg := string(after.Status.Phase)
	if c := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Message != "" {
		msg = c.Message
	}
	r.Recorder.Eventf(after, nil, typ, string(after.Status.Phase), "Phase", "%s", msg)
}

// approvalEvent says, once per spec change, that an approval naming another
// rollout changes nothing.
func (r *Reconciler) approvalEvent(ro *v1alpha1.DriverRollout) {
	s := &ro.Spec
	if s.Approval == "" || s.Approval == ro.Name || ro.Generation == ro.Status.ObservedGeneration {
		return
	}
	r.Recorder.Eventf(ro, nil, corev1.EventTypeWarning, "ApprovalRejected", "Approve",
		"spec.approval %q does not name this rollout; set it to %q to approve: nothing changes", s.Approval, ro.Name)
}

// releaseOrphans releases nodes whose rollout is gone without having
// released them, the way its finalizer would have (releaseNode).
func (r *Reconciler) releaseOrphans(ctx context.Context, nodes []*corev1.Node) error {
	for _, n := range nodes {
		want, changed := releaseNode(n)
		if !changed {
			continue
		}
		log.FromContext(ctx).Info("releasing a node whose rollout is gone", "node", n.Name, "rollout", n.Labels[v1alpha1.LabelRollout])
		err := r.Client.Patch(ctx, want, client.MergeFromWithOptions(n, client.MergeFromWithOptimisticLock{}))
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("release node %s of the deleted rollout %s: %w", n.Name, n.Labels[v1alpha1.LabelRollout], err)
		}
	}
	return nil
}

// finalize releases the rollout's nodes (see releaseNode) and removes the
// finalizer. It reads the nodes from the API server, not the cache: a node
// this rollout took in its last pass and the cache does not show yet would
// otherwise keep naming a rollout that is gone.
func (r *Reconciler) finalize(ctx context.Context, ro *v1alpha1.DriverRollout) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ro, Finalizer) {
		return ctrl.Result{}, nil
	}
	var nodes corev1.NodeList
	if err := r.apiReader().List(ctx, &nodes, client.MatchingLabels{v1alpha1.LabelRollout: ro.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list nodes of rollout %s: %w", ro.Name, err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		want, changed := releaseNode(n)
		if !changed {
			continue
		}
		// With the node's resourceVersion: a node that changed since the
		// read (another rollout took it once released) is read again.
		err := r.Client.Patch(ctx, want, client.MergeFromWithOptions(n, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
		}
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("release node %s: %w", n.Name, err)
		}
	}
	base := ro.DeepCopy()
	controllerutil.RemoveFinalizer(ro, Finalizer)
	if err := r.Client.Patch(ctx, ro, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	r.Metrics.forget(ro.Name)
	return ctrl.Result{}, nil
}
