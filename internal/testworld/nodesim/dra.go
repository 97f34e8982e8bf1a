package nodesim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The DRA kubelet plugin of NVIDIA's DRA driver for GPUs, on the nodes of a
// pool with DRA set. Its pod is a DaemonSet's, which kwok runs (package
// nodesimtest makes the DaemonSet, as the driver's chart would); the
// simulator plays what runs inside it:
//
//   - publishing the node's ResourceSlices with the real publisher of a
//     kubelet plugin (k8s.io/dynamic-resource-allocation's resourceslice
//     controller, owned by the node): one device per GPU of driver
//     gpu.nvidia.com, its driverVersion attribute the driver loaded when
//     the plugin pod started (semver form: 580.95.05 is 580.95.5), and one
//     IMEX channel of compute-domain.nvidia.com. The version is read once
//     per plugin pod: a driver reloaded under a running plugin leaves its
//     slices stale, as the real plugin's are (k8s-driver-manager PR #203);
//     a plugin started before any driver is loaded waits for one, as the
//     real one's init container does. A node whose plugin is gone keeps
//     its last slices.
//   - preparing and unpreparing claims: a pod on the node holding a claim
//     (the real scheduler allocated it) is prepared by a running plugin,
//     which puts FinalizerDRAPrepared on it; a deleted pod's claims are
//     unprepared, the finalizer taken away, only while the plugin runs. A
//     pod deleted after its plugin went stays terminating, and its claims
//     reserved (k8s-driver-manager PR #217).

// FinalizerDRAPrepared marks a pod whose claims the simulated DRA plugin
// prepared: the pod object goes only once they are unprepared.
const FinalizerDRAPrepared = "nodesim.gpufleet.io/dra-prepared"

// LabelDRANode marks the nodes of a pool with DRA: the simulated DRA
// kubelet plugin's DaemonSet selects them.
const LabelDRANode = "nodesim.gpufleet.io/dra"

// ChannelDevice is the name of the one IMEX channel device the simulated
// compute-domain.nvidia.com plugin publishes on each node.
const ChannelDevice = "channel-0"

// draPublisher is one node's running slice publisher, and what it
// publishes for.
type draPublisher struct {
	// ctl stops it; nil while it waits for a driver.
	ctl stopper
	// plugin is the plugin pod it publishes for; version the driver it
	// read when it started ("" while none was loaded).
	plugin  types.UID
	version string
}

// syncDRA plays the DRA plugin of node n (a DRA pool's), whose plugin pods
// are plugins and pods with claims are claimed.
func (s *Sim) syncDRA(ctx context.Context, n *corev1.Node, plugins, claimed []*corev1.Pod) error {
	var plugin *corev1.Pod
	for _, p := range plugins {
		if p.DeletionTimestamp == nil && planner.PodReady(p) {
			plugin = p
		}
	}
	errs := []error{s.publish(ctx, n, plugin)}
	for _, p := range claimed {
		errs = append(errs, s.prepare(ctx, p, plugin != nil))
	}
	return errors.Join(errs...)
}

// publish keeps node n's ResourceSlices as its plugin pod (nil: none
// running) publishes them.
func (s *Sim) publish(ctx context.Context, n *corev1.Node, plugin *corev1.Pod) error {
	s.mu.Lock()
	pub := s.publishers[n.Name]
	s.mu.Unlock()
	if plugin == nil {
		if pub != nil {
			pub.stop()
			s.setPublisher(n.Name, nil)
			s.opts.Logf("nodesim: node %s: DRA kubelet plugin gone: its slices stay as they were", n.Name)
		}
		return nil
	}
	loaded := n.Labels[v1alpha1.LabelGFDDriverFull]
	if n.Annotations[AnnotationDriverUnloaded] == "true" {
		loaded = ""
	}
	if pub != nil && pub.plugin == plugin.UID && (pub.version != "" || loaded == "") {
		return nil // stale or not, what this plugin pod read stays
	}
	if pub != nil {
		pub.stop()
		s.setPublisher(n.Name, nil)
	}
	if loaded == "" {
		s.setPublisher(n.Name, &draPublisher{plugin: plugin.UID})
		return nil
	}
	if s.opts.Kube == nil {
		return fmt.Errorf("node %s: a DRA pool needs Options.Kube to publish ResourceSlices", n.Name)
	}
	pool := s.poolOf(n.Name).withDefaults()
	var errs []error
	var ctls []*resourceslice.Controller
	for _, driver := range []string{v1alpha1.DRADriverGPU, v1alpha1.DRADriverComputeDomain} {
		delay := 200 * time.Millisecond
		ctl, err := resourceslice.StartController(context.WithoutCancel(ctx), resourceslice.Options{
			DriverName: driver,
			KubeClient: s.opts.Kube,
			Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID},
			Resources:  &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{n.Name: {Slices: []resourceslice.Slice{{Devices: devices(driver, pool, loaded)}}}}},
			SyncDelay:  &delay,
			ErrorHandler: func(_ context.Context, err error, msg string) {
				s.opts.Logf("nodesim: node %s: publish %s slices: %s: %v", n.Name, driver, msg, err)
			},
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: publish %s slices: %w", n.Name, driver, err))
			continue
		}
		ctls = append(ctls, ctl)
	}
	s.setPublisher(n.Name, &draPublisher{ctl: multiController(ctls), plugin: plugin.UID, version: loaded})
	s.opts.Logf("nodesim: node %s: DRA kubelet plugin %s publishes driver %s", n.Name, plugin.Name, loaded)
	return errors.Join(errs...)
}

// devices are what driver's plugin publishes on a node of pool p running
// driver version: its GPUs, or one IMEX channel.
func devices(driver string, p Pool, version string) []resourcev1.Device {
	if driver == v1alpha1.DRADriverComputeDomain {
		return []resourcev1.Device{{Name: ChannelDevice, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type": {StringValue: new("channel")},
		}}}
	}
	out := make([]resourcev1.Device, p.GPUCount)
	for i := range out {
		out[i] = resourcev1.Device{Name: "gpu-" + strconv.Itoa(i), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			v1alpha1.DRAAttributeDriverVersion: {VersionValue: new(planner.SemverForm(version))},
			dra.AttributeProductName:           {StringValue: new(p.Product)},
			"type":                             {StringValue: new("gpu")},
		}}
	}
	return out
}

// prepare plays the plugin's prepare and unprepare of pod p's claims: a
// running pod is prepared (the finalizer put on) while the plugin runs; a
// deleted one is unprepared (the finalizer taken away), only while the
// plugin runs.
func (s *Sim) prepare(ctx context.Context, p *corev1.Pod, pluginRunning bool) error {
	prepared := slices.Contains(p.Finalizers, FinalizerDRAPrepared)
	switch {
	case !pluginRunning:
		return nil
	case p.DeletionTimestamp == nil && !prepared && p.Status.Phase == corev1.PodRunning:
	case p.DeletionTimestamp != nil && prepared:
	default:
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &corev1.Pod{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.DeletionTimestamp == nil {
			if slices.Contains(cur.Finalizers, FinalizerDRAPrepared) {
				return nil
			}
			cur.Finalizers = append(cur.Finalizers, FinalizerDRAPrepared)
		} else {
			cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == FinalizerDRAPrepared })
		}
		return s.c.Update(ctx, cur)
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s: DRA prepare: %w", p.Namespace, p.Name, err)
	}
	what := "prepared"
	if p.DeletionTimestamp != nil {
		what = "unprepared"
	}
	s.opts.Logf("nodesim: node %s: DRA claims of pod %s/%s %s", p.Spec.NodeName, p.Namespace, p.Name, what)
	return nil
}

// stop stops p's controllers, if any.
func (p *draPublisher) stop() {
	if p.ctl != nil {
		p.ctl.Stop()
	}
}

func (s *Sim) setPublisher(node string, p *draPublisher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.publishers, node)
		return
	}
	s.publishers[node] = p
}

// stopPublishers stops every node's publisher: their watches would
// otherwise outlive the node agent and keep the API server from stopping.
func (s *Sim) stopPublishers() {
	s.mu.Lock()
	pubs := s.publishers
	s.publishers = map[string]*draPublisher{}
	s.mu.Unlock()
	for _, p := range pubs {
		p.stop()
	}
}

// draPods lists the DRA plugin pods (by DRAPluginSelector) and the pods
// holding claims, by node.
func (s *Sim) draPods(ctx context.Context) (plugins, claimed map[string][]*corev1.Pod, err error) {
	sel, err := labels.Parse(v1alpha1.DefaultDRAKubeletPluginSelector)
	if err != nil {
		return nil, nil, err
	}
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods); err != nil {
		return nil, nil, fmt.Errorf("list pods: %w", err)
	}
	plugins, claimed = map[string][]*corev1.Pod{}, map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.Spec.NodeName == "":
		case sel.Matches(labels.Set(p.Labels)):
			plugins[p.Spec.NodeName] = append(plugins[p.Spec.NodeName], p)
		case len(p.Spec.ResourceClaims) > 0:
			claimed[p.Spec.NodeName] = append(claimed[p.Spec.NodeName], p)
		}
	}
	return plugins, claimed, nil
}

// multiController stops several controllers as one.
type multi []*resourceslice.Controller

func multiController(ctls []*resourceslice.Controller) stopper { return multi(ctls) }

func (m multi) Stop() {
	for _, c := range m {
		c.Stop()
	}
}

// stopper is what the simulator does with a publisher: stop it.
type stopper interface{ Stop() }
