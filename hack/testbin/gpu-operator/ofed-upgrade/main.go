// Command ofed-upgrade is the NVIDIA Network Operator's OFED upgrade
// controller for the testbed: the real upgrade state machine of
// k8s-operator-libs (pkg/upgrade, driver name "ofed"), configured and
// called as the Network Operator configures and calls it (its
// controllers/upgrade_controller.go and the setup in its main.go, read at
// tags v25.4.0 and v25.10.0).
//
// Why a program of our own: the module proxy does not serve the Network
// Operator, so it cannot be built; the state machine it runs is served,
// and this wrapper module (the GPU Operator's) pins the version the GPU
// Operator v25.3.4 links. What this program adds is only what the Network
// Operator's upgrade reconciler does around the library:
//
//   - it reads the cluster-scoped NicClusterPolicy "nic-cluster-policy"
//     (unstructured: the Network Operator's Go API cannot be built either);
//   - with no policy, or spec.ofedDriver.upgradePolicy.autoUpgrade not true,
//     it removes the upgrade state label from every node (the operator's
//     cleanup) and does nothing else;
//   - otherwise BuildState over the pods labelled nvidia.com/ofed-driver in
//     the operator's namespace, then ApplyState with the policy converted
//     as the operator's GetDriverUpgradePolicy converts it (no pod
//     deletion state; a drain's pod selector gets the operator's
//     "nvidia.com/ofed-driver-upgrade-drain.skip!=true" added);
//   - it runs again on changes of the policy, of node labels and
//     annotations, and of DaemonSets labelled nvidia.com/ofed-driver (the
//     operator's watches: not pods), and every --requeue while the upgrade
//     is on (the operator: two minutes).
//
// Left off, as the Network Operator's defaults leave them: requestor mode
// (NodeMaintenance objects) and the event recorder (the operator passes
// nil). The library pinned here predates requestor mode.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	upgradeapi "github.com/NVIDIA/k8s-operator-libs/api/upgrade/v1alpha1"
	"github.com/NVIDIA/k8s-operator-libs/pkg/upgrade"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The Network Operator's names (its pkg/consts).
const (
	policyName            = "nic-cluster-policy"
	ofedDriverLabel       = "nvidia.com/ofed-driver"
	skipDrainSelector     = "nvidia.com/ofed-driver-upgrade-drain.skip!=true"
	legacyStateAnnotation = "nvidia.com/ofed-upgrade-state"
)

// policyGVK is the NicClusterPolicy's kind.
var policyGVK = schema.GroupVersionKind{Group: "mellanox.com", Version: "v1alpha1", Kind: "NicClusterPolicy"}

func main() {
	var (
		namespace = flag.String("namespace", "nvidia-network-operator", "the Network Operator's namespace, where the OFED DaemonSets run")
		requeue   = flag.Duration("requeue", 2*time.Minute, "how often to look again while the upgrade is on (the Network Operator: 2m)")
		health    = flag.String("health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	)
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	// --kubeconfig is controller-runtime's own flag, read by GetConfig as
	// the Network Operator reads it.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ofed-upgrade: kubeconfig:", err)
		os.Exit(1)
	}
	if err := run(ctrl.SetupSignalHandler(), cfg, *namespace, *requeue, *health); err != nil {
		fmt.Fprintln(os.Stderr, "ofed-upgrade:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *rest.Config, namespace string, requeue time.Duration, health string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: health,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	// As the Network Operator's setupUpgradeController: driver name first
	// (it names every label and annotation), then a manager with no event
	// recorder.
	upgrade.SetDriverName("ofed")
	log := ctrl.Log.WithName("controllers").WithName("Upgrade")
	sm, err := upgrade.NewClusterUpgradeStateManager(log.WithName("clusterUpgradeManager"), cfg, nil)
	if err != nil {
		return fmt.Errorf("upgrade state manager: %w", err)
	}
	r := &reconciler{c: mgr.GetClient(), sm: sm, namespace: namespace, requeue: requeue}
	if err := r.setup(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("health", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("check", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// reconciler is the Network Operator's UpgradeReconciler, less its
// migration channel and NicNodePolicies.
type reconciler struct {
	c         client.Client
	sm        upgrade.ClusterUpgradeStateManager
	namespace string
	requeue   time.Duration
}

func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(policyGVK)
	if err := r.c.Get(ctx, types.NamespacedName{Name: policyName}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.removeStateLabels(ctx)
		}
		return reconcile.Result{}, err
	}
	if err := r.removeLegacyAnnotations(ctx); err != nil {
		return reconcile.Result{}, err
	}
	up, err := upgradePolicy(policy)
	if err != nil {
		return reconcile.Result{}, err
	}
	if up == nil || !up.AutoUpgrade {
		log.Info("OFED Upgrade Policy is disabled, skipping driver upgrade")
		return reconcile.Result{}, r.removeStateLabels(ctx)
	}
	state, err := r.sm.BuildState(ctx, r.namespace, map[string]string{ofedDriverLabel: ""})
	if err != nil {
		log.Error(err, "Failed to build cluster upgrade state")
		return reconcile.Result{}, err
	}
	if err := r.sm.ApplyState(ctx, state, up); err != nil {
		log.Error(err, "Failed to apply cluster upgrade state")
		return reconcile.Result{}, err
	}
	// The operator's note: state changes that failed to apply would leave
	// the upgrade stuck until something else changes, so look again.
	return reconcile.Result{RequeueAfter: r.requeue}, nil
}

// upgradePolicy converts spec.ofedDriver.upgradePolicy as the Network
// Operator's GetDriverUpgradePolicy does; nil when there is none.
func upgradePolicy(policy *unstructured.Unstructured) (*upgradeapi.DriverUpgradePolicySpec, error) {
	raw, found, err := unstructured.NestedMap(policy.Object, "spec", "ofedDriver", "upgradePolicy")
	if err != nil || !found {
		return nil, err
	}
	var in struct {
		AutoUpgrade         bool                              `json:"autoUpgrade,omitempty"`
		MaxParallelUpgrades int                               `json:"maxParallelUpgrades,omitempty"`
		WaitForCompletion   *upgradeapi.WaitForCompletionSpec `json:"waitForCompletion,omitempty"`
		DrainSpec           *upgradeapi.DrainSpec             `json:"drain,omitempty"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &in); err != nil {
		return nil, fmt.Errorf("NicClusterPolicy %s: spec.ofedDriver.upgradePolicy: %w", policyName, err)
	}
	out := &upgradeapi.DriverUpgradePolicySpec{
		AutoUpgrade:         in.AutoUpgrade,
		MaxParallelUpgrades: in.MaxParallelUpgrades,
		WaitForCompletion:   in.WaitForCompletion,
		DrainSpec:           in.DrainSpec,
	}
	if out.DrainSpec != nil && out.DrainSpec.Enable {
		// The operator never drains its own pods (a single-node cluster
		// would hang with the operator evicted).
		if out.DrainSpec.PodSelector == "" {
			out.DrainSpec.PodSelector = skipDrainSelector
		} else {
			out.DrainSpec.PodSelector += "," + skipDrainSelector
		}
	}
	return out, nil
}

// removeStateLabels takes the upgrade state label off every node, as the
// operator does when its upgrade is off.
func (r *reconciler) removeStateLabels(ctx context.Context) error {
	key := upgrade.GetUpgradeStateLabelKey()
	return r.eachNode(ctx, func(n *corev1.Node) bool {
		if _, ok := n.Labels[key]; !ok {
			return false
		}
		delete(n.Labels, key)
		return true
	})
}

// removeLegacyAnnotations drops the state annotation of old operator
// versions, as the operator still does on every pass.
func (r *reconciler) removeLegacyAnnotations(ctx context.Context) error {
	return r.eachNode(ctx, func(n *corev1.Node) bool {
		if _, ok := n.Annotations[legacyStateAnnotation]; !ok {
			return false
		}
		delete(n.Annotations, legacyStateAnnotation)
		return true
	})
}

// eachNode updates every node that change says it changed.
func (r *reconciler) eachNode(ctx context.Context, change func(*corev1.Node) bool) error {
	nodes := &corev1.NodeList{}
	if err := r.c.List(ctx, nodes); err != nil {
		return err
	}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; change(n) {
			if err := r.c.Update(ctx, n); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// setup watches what the operator's SetupWithManager watches, every event
// queueing the same key: one reconcile at a time over the whole cluster.
func (r *reconciler) setup(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{
			Namespace: "ofed-upgrade-reconcile-namespace", Name: "ofed-upgrade-reconcile-name",
		}}}
	})
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(policyGVK)
	ofedDaemonSets := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[ofedDriverLabel]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("Upgrade").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Watches(policy, one).
		Watches(&corev1.Node{}, one, builder.WithPredicates(
			predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&appsv1.DaemonSet{}, one, builder.WithPredicates(ofedDaemonSets)).
		Complete(r)
}
