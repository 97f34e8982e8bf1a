package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Name is the controller's name: its Events' reporting controller, its
// leader-election lease and its field manager.
const Name = "gpufleet-controller"

// Options configure the manager that runs the controller.
type Options struct {
	// MetricsAddr serves /metrics; "0" turns it off.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" turns it off.
	ProbeAddr string
	// LeaderElect makes only one replica act at a time.
	LeaderElect bool
	// LeaderElectionNamespace holds the lease; the pod's own namespace
	// when empty (in cluster).
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election
	// (controller-runtime's 15s, 10s and 2s when zero): how long a
	// replica waits before taking over from a leader that stopped
	// renewing, how long a leader tries to renew before it stops acting,
	// and how often both try. Shorter hand-overs cost more API calls.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DriverPodSelector selects the GPU Operator's driver pods.
	DriverPodSelector string
	// DrainRetry and HealthPoll: see Reconciler.
	DrainRetry, HealthPoll time.Duration
	// Version is the controller's own version: see Reconciler.Version.
	Version string
	// Clock defaults to the wall clock (tests move it).
	Clock Clock
	// Prometheus defaults to PrometheusHTTP.
	Prometheus MetricsSource
	// WrapClient, when set, wraps the reconciler's client (a benchmark
	// counts API writes with it).
	WrapClient func(client.Client) client.Client
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
}

// Validate collects every problem with the options.
func (o *Options) Validate() error {
	var errs []error
	if _, err := labels.Parse(o.DriverPodSelector); err != nil {
		errs = append(errs, fmt.Errorf("driver pod selector %q: %w", o.DriverPodSelector, err))
	}
	if o.DrainRetry < 0 {
		errs = append(errs, fmt.Errorf("drain retry %s is negative", o.DrainRetry))
	}
	if o.HealthPoll < 0 {
		errs = append(errs, fmt.Errorf("health poll %s is negative", o.HealthPoll))
	}
	if o.LeaseDuration < 0 || o.RenewDeadline < 0 || o.RetryPeriod < 0 {
		errs = append(errs, errors.New("leader election durations must not be negative"))
	}
	if o.LeaseDuration > 0 && o.RenewDeadline > 0 && o.RenewDeadline >= o.LeaseDuration {
		errs = append(errs, fmt.Errorf("leader election renew deadline %s must be shorter than the lease duration %s", o.RenewDeadline, o.LeaseDuration))
	}
	return errors.Join(errs...)
}

// NewScheme returns the scheme the controller reads and writes with.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// NewManager builds a manager running the DriverRollout controller, with
// metrics (controller-runtime's registry), health and readiness probes,
// and optional leader election. It contacts nothing until started.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.DriverPodSelector == "" {
		o.DriverPodSelector = DefaultDriverPodSelector
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	sel, _ := labels.Parse(o.DriverPodSelector)
	orNil := func(d time.Duration) *time.Duration {
		if d == 0 {
			return nil
		}
		return &d
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaseDuration:           orNil(o.LeaseDuration),
		RenewDeadline:           orNil(o.RenewDeadline),
		RetryPeriod:             orNil(o.RetryPeriod),
		Scheme:                  NewScheme(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        Name + ".gpufleet.io",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The controller acts on nodes: when it loses the lease it stops
		// at once rather than act beside a new leader.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOptions(sel),
		Controller:                    ctrlConfig(o.SkipNameValidation),
	})
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	// Ready once the cache has synced: before that the controller knows
	// nothing of the cluster.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("cache not synced")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("readiness check: %w", err)
	}
	m, err := NewMetrics(metrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	// The caches of their own, beside the manager's: every pod trimmed to
	// its GPU work, and the Network Operator's OFED pods.
	gpuPods, err := addCache(ctx, cfg, mgr, "GPU pod cache", newGPUPodCache)
	if err != nil {
		return nil, err
	}
	ofedPods, err := addCache(ctx, cfg, mgr, "OFED pod cache", newOFEDPodCache)
	if err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	if o.WrapClient != nil {
		c = o.WrapClient(c)
	}
	r := &Reconciler{
		Client:     c,
		APIReader:  mgr.GetAPIReader(),
		Clock:      o.Clock,
		Recorder:   mgr.GetEventRecorder(Name),
		Metrics:    m,
		Prometheus: o.Prometheus,
		DriverPods: sel,
		GPUPods:    gpuPods,
		OFEDPods:   ofedPods,
		DrainRetry: o.DrainRetry,
		HealthPoll: o.HealthPoll,
		Version:    o.Version,
	}
	if err := r.SetupWithManager(ctx, mgr, "driverrollout"); err != nil {
		return nil, err
	}
	return mgr, nil
}

// addCache builds a cache of the controller's own with newCache, on the
// manager's HTTP client and REST mapper, and has the manager run it.
func addCache(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, what string,
	newCache func(context.Context, *rest.Config, *runtime.Scheme, cache.Options) (cache.Cache, error)) (cache.Cache, error) {
	c, err := newCache(ctx, cfg, mgr.GetScheme(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper(), DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(ctx, cfg, o)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

func ctrlConfig(skipNameValidation bool) ctrlconfig.Controller {
	return ctrlconfig.Controller{SkipNameValidation: &skipNameValidation}
}

// cacheOptions limit the manager's informer cache to what the controller
// reads, so its memory follows the node count and nothing else:
//
//   - Pods: only the driver pods (driverPods, by label), trimmed to what
//     driverState reads. The other pods of a cluster (most of its objects)
//     are read from the API server only for a node being drained (see
//     drainPods).
//   - Nodes: every node (a rollout's selector may pick any), without the
//     container image list and the volume lists kubelets report (half of a
//     real node object) and without managed fields. Labels, annotations,
//     the spec (cordon, taints) and the conditions stay: the controller
//     writes nodes with merge patches computed from the cached copy, and a
//     field it patches must be there for the patch to be right.
//   - Events: only those about nodes (health signals).
//   - Managed fields are dropped from everything: nothing reads them.
func cacheOptions(driverPods labels.Selector) cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:   {Label: driverPods, Transform: trimDriverPod},
			&corev1.Node{}:  {Transform: trimNode},
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "Node"), Transform: cache.TransformStripManagedFields()},
		},
	}
}

// trimNode drops what the controller never reads from a cached node.
func trimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status.Images = nil
		n.Status.VolumesInUse = nil
		n.Status.VolumesAttached = nil
	}
	return obj, nil
}

// trimDriverPod keeps of a driver pod what driverState and the pod index
// read: its metadata, the node it runs on, its node selector (the driver
// version of its DaemonSet), its containers' names and images (the version
// an image tag names) and its status. Volumes, environment, probes and the
// rest of the spec go. The controller never writes pods (evictions name
// them only), so no write is computed from the trimmed copy.
func trimDriverPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec = corev1.PodSpec{
		NodeName:       p.Spec.NodeName,
		NodeSelector:   p.Spec.NodeSelector,
		Containers:     nameAndImage(p.Spec.Containers),
		InitContainers: nameAndImage(p.Spec.InitContainers),
	}
	return p, nil
}

func nameAndImage(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}
