package nodesim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
	"github.com/gpufleet/gpufleet/internal/netop"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The Network Operator's OFED (DOCA) driver, as the simulator plays it
// inside the operator's OFED pods (pods labelled nvidia.com/ofed-driver in
// [Options.OFEDNamespace], on nodes of a pool with [Pool.ManagedNICs]):
// each new pod installs its version for [Options.OFEDInstallTime] and is
// then Ready, unless the version is marked bad ([Options.BadOFED],
// [Sim.MarkBadOFED]): then its mofed-container crash-loops, as an OFED
// build that fails does, past the upgrade controller's restart limit.
//
// A GPU driver pod with the nvidia-peermem-ctr sidecar (the GPU Operator
// adds it with rdma.enabled) needs the node's OFED twice, as the real one:
// its install begins only once the node's OFED pod is Ready (the driver's
// init waits for /run/mellanox/drivers/.driver-ready, without timeout),
// and its peermem container is Ready only while the OFED pod that was
// Ready when the driver pod started still is. An OFED pod that became
// Ready after the driver pod started (an OFED reload under a running GPU
// driver) leaves peermem crash-looping until the driver pod is recreated:
// nvidia_peermem was built against the OFED that was unloaded (GPU
// Operator issue #2868).

// AnnotationReadyAt, the simulator's own annotation, on an OFED pod is
// when its OFED driver was loaded, and on a GPU driver pod when its
// install began (or, with the version already loaded, when it started);
// RFC 3339 with nanoseconds: pod status times hold whole seconds only, too
// coarse to order the two on one node.
const AnnotationReadyAt = "nodesim.gpufleet.io/ready-at"

// DefaultOFEDNamespace is where the Network Operator runs its OFED pods
// unless told otherwise (its chart's default namespace).
const DefaultOFEDNamespace = "nvidia-network-operator"

// MarkBadOFED makes OFED version v fail to load in OFED pods that install
// it from now on.
func (s *Sim) MarkBadOFED(v string) { s.markBad(s.badOFED, v, true) }

func (s *Sim) isBadOFED(v string) bool { return s.inSet(s.badOFED, v) }

// OFEDPodVersion returns the OFED version an OFED pod loads, read from its
// mofed-container's image tag as the lifecycle controller reads it
// (v1alpha1.OFEDTagVersion: the Network Operator writes
// <version>-<os><os version>-<arch>, so
// "nvcr.io/nvidia/mellanox/doca-driver:25.04-0.6.1.0-2-ubuntu22.04-amd64"
// gives 25.04-0.6.1.0-2), or "" when p is not such a pod.
func OFEDPodVersion(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name != v1alpha1.OFEDContainer {
			continue
		}
		return v1alpha1.OFEDTagVersion(imageref.Tag(c.Image))
	}
	return ""
}

// ofedOn is what the simulator knows of a node's OFED: the pod that is not
// being deleted, and when its driver was loaded (zero while it is not).
type ofedOn struct {
	pod     *corev1.Pod
	readyAt time.Time
}

// ready reports whether the node's OFED driver is loaded.
func (o ofedOn) ready() bool { return o.pod != nil && containerReady(o.pod, v1alpha1.OFEDContainer) }

// nodeOFED picks, of the OFED pods bound to a node, the one not being
// deleted.
func nodeOFED(pods []*corev1.Pod) ofedOn {
	for _, p := range pods {
		if p.DeletionTimestamp != nil || OFEDPodVersion(p) == "" {
			continue
		}
		o := ofedOn{pod: p}
		if o.ready() {
			o.readyAt, _ = time.Parse(time.RFC3339Nano, p.Annotations[AnnotationReadyAt])
		}
		return o
	}
	return ofedOn{}
}

// syncOFEDInstall plays the OFED driver install inside OFED pod p on node
// n: installing from the first look, then Ready after the install time, or
// crash-looping when its version is bad.
func (s *Sim) syncOFEDInstall(ctx context.Context, n *corev1.Node, p *corev1.Pod, now time.Time) error {
	version := OFEDPodVersion(p)
	switch {
	case p.DeletionTimestamp != nil || version == "" || containerReady(p, v1alpha1.OFEDContainer):
		return nil
	case crashLooping(p, v1alpha1.OFEDContainer):
		return s.keepCrashing(ctx, p, v1alpha1.OFEDContainer, "could not load mlx5_core (simulated)", s.opts.OFEDInstallTime, now)
	case p.Status.StartTime == nil:
		s.opts.Logf("nodesim: node %s: pod %s installing OFED %s", n.Name, p.Name, version)
		s.mu.Lock()
		s.installs[p.UID] = now
		s.mu.Unlock()
		return s.setPodStatus(ctx, p, containerStatuses(p, podInstalling(now, v1alpha1.OFEDContainer, "installing the OFED driver (simulated)"), nil))
	case now.Sub(s.installStart(p)) < s.opts.OFEDInstallTime:
		return nil
	case s.isBadOFED(version):
		s.forgetInstall(p)
		s.opts.Logf("nodesim: node %s: OFED %s is marked bad: pod %s crash-loops", n.Name, version, p.Name)
		return s.setPodStatus(ctx, p, containerStatuses(p, podCrashing(now, v1alpha1.OFEDContainer,
			"could not load mlx5_core (simulated)", "OFED driver build failed (simulated)"), nil))
	default:
		s.forgetInstall(p)
		s.opts.Logf("nodesim: node %s: OFED %s loaded: pod %s Ready", n.Name, version, p.Name)
		// The time first, then the status: a reader that sees the pod
		// Ready always finds when it became so.
		if err := s.annotatePod(ctx, p, AnnotationReadyAt, now.UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
		if err := s.setPodStatus(ctx, p, containerStatuses(p, podRunning(now, v1alpha1.OFEDContainer), nil)); err != nil {
			return err
		}
		return s.record(ctx, n, ReasonOFEDReady, version, p.Name, "OFED driver "+version+" loaded", now)
	}
}

// peermem is the state of a GPU driver pod's nvidia-peermem-ctr, given the
// node's OFED.
type peermem int

const (
	peermemNone    peermem = iota // the pod has no peermem container
	peermemReady                  // loaded against the OFED that runs
	peermemWaiting                // the node's OFED is not loaded
	peermemStale                  // built against an OFED since reloaded: crash-loops
)

// peermemState says how the peermem container of driver pod p fares with
// the node's OFED o.
func peermemState(p *corev1.Pod, o ofedOn) peermem {
	if !hasContainer(p, v1alpha1.PeermemContainer) {
		return peermemNone
	}
	if !o.ready() {
		return peermemWaiting
	}
	started, err := time.Parse(time.RFC3339Nano, p.Annotations[AnnotationReadyAt])
	if err != nil || netop.DriverStale(started, o.readyAt) {
		return peermemStale
	}
	return peermemReady
}

// syncPeermem keeps the peermem container of running driver pod p as the
// node's OFED says: Ready, waiting, or crash-looping.
func (s *Sim) syncPeermem(ctx context.Context, n *corev1.Node, p *corev1.Pod, o ofedOn, now time.Time) error {
	want := peermemState(p, o)
	var cur corev1.ContainerStatus
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == v1alpha1.PeermemContainer {
			cur = cs
		}
	}
	switch want {
	case peermemNone, peermemReady:
		// A pod the node lifecycle controller marked not Ready (its node
		// stopped for a while) is Ready again once its kubelet runs.
		if planner.PodReady(p) {
			return nil
		}
	case peermemWaiting:
		if cur.State.Waiting != nil && cur.State.Waiting.Reason == reasonWaitingOFED {
			return nil
		}
	case peermemStale:
		if cur.State.Waiting != nil && cur.State.Waiting.Reason == "CrashLoopBackOff" {
			return s.keepCrashing(ctx, p, v1alpha1.PeermemContainer, peermemMismatch, s.opts.InstallTime, now)
		}
	}
	s.opts.Logf("nodesim: node %s: pod %s: %s", n.Name, p.Name, [...]string{
		"Ready", "Ready, peermem loaded", "peermem waits for OFED", "peermem crash-loops (OFED reloaded under it)"}[want])
	return s.setPodStatus(ctx, p, containerStatuses(p, podRunning(now, DriverContainer), &want))
}

// reasonWaitingOFED is the waiting reason of a peermem container while the
// node's OFED driver is not loaded.
const reasonWaitingOFED = "WaitingForOFED"

// peermemMismatch is what nvidia_peermem says when loaded against the
// symbols of an OFED that was unloaded (gpu-operator #2868).
const peermemMismatch = "nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client (simulated)"

// peermemStatus rewrites cs, the peermem container's status in a running
// driver pod, as state says.
func peermemStatus(cs *corev1.ContainerStatus, state peermem, now time.Time) {
	t := metav1.NewTime(now)
	switch state {
	case peermemWaiting:
		cs.Ready, cs.Started = false, nil
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: reasonWaitingOFED, Message: "waiting for /run/mellanox/drivers/.driver-ready (simulated)",
		}}
	case peermemStale:
		cs.Ready, cs.Started = false, nil
		cs.RestartCount++
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "back-off restarting failed container=" + v1alpha1.PeermemContainer,
		}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: peermemMismatch, StartedAt: t, FinishedAt: t,
		}}
	}
}
