package nodesim

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
)

// DriverContainer is the name of the driver container in the GPU
// Operator's driver pods; its image tag carries the driver version.
const DriverContainer = "nvidia-driver-ctr"

// syncDriverInstall plays the driver install inside driver pod p on node n,
// whose OFED is o. A pod whose version is loaded (the node's GFD label
// reports it, and no install of another version began since) is Ready at
// once, as the real driver container skips an install of the loaded
// version; any other starts installing (its status' startTime marks when)
// and after the install time is Ready, or crash-loops if its version is
// bad. Once a pod is Ready the node's GFD labels report its version. A pod
// with peermem starts only once the node's OFED is loaded, and is Ready
// only while its peermem container is (see ofed.go).
func (s *Sim) syncDriverInstall(ctx context.Context, n *corev1.Node, p *corev1.Pod, o ofedOn, now time.Time) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	version := DriverPodVersion(p)
	if version == "" {
		return nil
	}
	reported := n.Labels[v1alpha1.LabelGFDDriverFull]
	loaded := reported
	if n.Annotations[AnnotationDriverUnloaded] == "true" {
		loaded = ""
	}
	switch {
	case containerReady(p, DriverContainer):
		if reported != version {
			s.opts.Logf("nodesim: node %s: GFD reports driver %s", n.Name, version)
			if err := s.setLoaded(ctx, n.Name, version); err != nil {
				return err
			}
		}
		return s.syncPeermem(ctx, n, p, o, now)
	case crashLooping(p, DriverContainer):
		return s.keepCrashing(ctx, p, DriverContainer, driverLoadFailed, s.opts.InstallTime, now)
	case p.Status.StartTime == nil && peermemState(p, o) == peermemWaiting:
		// The driver's init container waits, without timeout, for the
		// node's OFED driver: nothing starts.
		return nil
	case p.Status.StartTime == nil && loaded == version:
		s.opts.Logf("nodesim: node %s: driver %s already loaded: pod %s Ready", n.Name, version, p.Name)
		if err := s.annotatePod(ctx, p, AnnotationReadyAt, now.UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
		peer := peermemState(p, o)
		return s.setPodStatus(ctx, p, containerStatuses(p, podRunning(now, DriverContainer), &peer))
	case p.Status.StartTime == nil:
		s.opts.Logf("nodesim: node %s: pod %s installing driver %s", n.Name, p.Name, version)
		if loaded != "" {
			// The driver container unloads the running driver's kernel
			// modules before it installs its own: whatever comes of this
			// install, the version GFD still reports is no longer loaded,
			// and going back to it (a rollback) installs it again.
			if err := s.updateNode(ctx, n.Name, func(n *corev1.Node) {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[AnnotationDriverUnloaded] = "true"
			}); err != nil {
				return err
			}
		}
		if err := s.annotatePod(ctx, p, AnnotationReadyAt, now.UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
		if err := s.setPodStatus(ctx, p, containerStatuses(p, podInstalling(now, DriverContainer, "installing the driver (simulated)"), nil)); err != nil {
			return err
		}
		s.mu.Lock()
		s.installs[p.UID] = now
		s.mu.Unlock()
		return s.record(ctx, n, ReasonDriverInstall, version, p.Name, "GPU driver "+version+" install began", now)
	case now.Sub(s.installStart(p)) < s.opts.InstallTime:
		return nil
	case s.isBad(version):
		s.forgetInstall(p)
		s.opts.Logf("nodesim: node %s: driver %s is marked bad: pod %s crash-loops", n.Name, version, p.Name)
		return s.setPodStatus(ctx, p, containerStatuses(p, podCrashing(now, DriverContainer, driverLoadFailed, "simulated install failure"), nil))
	default:
		s.forgetInstall(p)
		s.opts.Logf("nodesim: node %s: driver %s installed: pod %s Ready", n.Name, version, p.Name)
		peer := peermemState(p, o)
		if err := s.setPodStatus(ctx, p, containerStatuses(p, podRunning(now, DriverContainer), &peer)); err != nil {
			return err
		}
		return s.setLoaded(ctx, n.Name, version)
	}
}

// driverLoadFailed is a crash-looping driver container's last words.
const driverLoadFailed = "could not load the NVIDIA kernel module (simulated)"

// installStart is when the install in driver pod p began: as this
// simulator saw it, or the pod's startTime when another one started it.
func (s *Sim) installStart(p *corev1.Pod) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.installs[p.UID]; ok {
		return t
	}
	return p.Status.StartTime.Time
}

// forgetInstall drops the start of p's install once it ended.
func (s *Sim) forgetInstall(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.installs, p.UID)
}

// setLoaded records on node that driver version runs: GFD's labels report
// it, and it is loaded.
func (s *Sim) setLoaded(ctx context.Context, node, version string) error {
	return s.updateNode(ctx, node, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		maps.Copy(n.Labels, driverVersionLabels(version))
		delete(n.Annotations, AnnotationDriverUnloaded)
	})
}

// DriverPodVersion returns the driver version a GPU Operator driver pod
// installs, read from its driver container's image tag as the lifecycle
// controller reads it (v1alpha1.DriverTagVersion:
// "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04" gives 580.95.05), or ""
// when p is not such a pod.
func DriverPodVersion(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name != DriverContainer {
			continue
		}
		return v1alpha1.DriverTagVersion(imageref.Tag(c.Image))
	}
	return ""
}

// containerStatuses fits a simulated status to the real pod: one status per
// container and init container of its spec, with the main container's
// state from st (its only container status), the others running (or
// completed) alongside it. With peer, the peermem container is as peer
// says, and the pod is Ready only when it is.
func containerStatuses(p *corev1.Pod, st corev1.PodStatus, peer *peermem) corev1.PodStatus {
	main := st.ContainerStatuses[0]
	ready := main.Ready
	st.ContainerStatuses = nil
	allReady := ready
	for _, c := range p.Spec.Containers {
		cs := main
		cs.Name, cs.Image = c.Name, c.Image
		if c.Name != main.Name && main.State.Running == nil {
			// Sidecars wait for the main container.
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			cs.Ready, cs.RestartCount = false, 0
		}
		cs.Ready = cs.Ready && ready
		if c.Name == main.Name && cs.State.Running != nil {
			// A container that runs on keeps its start, as a kubelet
			// reports it, whatever its sidecar does: the controller tells
			// a driver loaded before its node's OFED by it.
			for _, old := range p.Status.ContainerStatuses {
				if old.Name == c.Name && old.State.Running != nil {
					cs.State.Running = old.State.Running.DeepCopy()
				}
			}
		}
		if c.Name == v1alpha1.PeermemContainer && peer != nil && main.State.Running != nil {
			for _, old := range p.Status.ContainerStatuses {
				if old.Name == c.Name {
					cs.RestartCount = old.RestartCount
				}
			}
			peermemStatus(&cs, *peer, st.StartTime.Time)
		}
		allReady = allReady && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if !allReady {
		for i := range st.Conditions {
			if t := st.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
				st.Conditions[i].Status, st.Conditions[i].Reason = corev1.ConditionFalse, "ContainersNotReady"
			}
		}
	}
	start := metav1.Now()
	if st.StartTime != nil {
		start = *st.StartTime
	}
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: start,
			}},
		})
	}
	st.HostIP = p.Status.HostIP
	st.PodIP = p.Status.PodIP
	st.QOSClass = p.Status.QOSClass
	return st
}

// setPodStatus writes st as p's status, unless p changed since it was read
// (the next pass looks again).
func (s *Sim) setPodStatus(ctx context.Context, p *corev1.Pod, st corev1.PodStatus) error {
	cp := p.DeepCopy()
	cp.Status = st
	if err := s.c.Status().Update(ctx, cp); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("pod %s: update status: %w", p.Name, err)
	}
	return nil
}

// annotatePod sets annotation key of p to value; p is updated in place, so
// a status written next goes with the new resource version.
func (s *Sim) annotatePod(ctx context.Context, p *corev1.Pod, key, value string) error {
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[key] = value
	if err := s.c.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("pod %s: annotate: %w", p.Name, err)
	}
	return nil
}

// crashRestarts is how many restarts a crash-looping container reaches:
// past the upgrade controllers' limit (k8s-operator-libs fails a node
// whose driver pod restarted more than ten times), then no more writes.
const crashRestarts = 12

// keepCrashing plays the kubelet restarting crash-looping container of p:
// one more restart every interval (the kubelet's back-off, compressed like
// the install itself), up to crashRestarts.
func (s *Sim) keepCrashing(ctx context.Context, p *corev1.Pod, container, msg string, interval time.Duration, now time.Time) error {
	st := p.Status.DeepCopy()
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.Name != container || cs.RestartCount >= crashRestarts {
			continue
		}
		last := cs.LastTerminationState.Terminated
		if last != nil && now.Sub(last.FinishedAt.Time) < interval {
			return nil
		}
		cs.RestartCount++
		t := metav1.NewTime(now)
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: msg, StartedAt: t, FinishedAt: t,
		}}
		return s.setPodStatus(ctx, p, *st)
	}
	return nil
}

// podInstalling is the status of a pod whose container is installing a
// driver: pending, not Ready.
func podInstalling(now time.Time, container, msg string) corev1.PodStatus {
	t := metav1.NewTime(now)
	return corev1.PodStatus{
		Phase:     corev1.PodPending,
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ContainerCreating", Message: msg,
			}},
		}},
	}
}

// podRunning is the status of a pod whose container runs and is Ready.
func podRunning(now time.Time, container string) corev1.PodStatus {
	t := metav1.NewTime(now)
	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

// podCrashing is the status of a pod whose driver failed to load: the
// container keeps restarting, as a driver that cannot load does.
func podCrashing(now time.Time, container, msg, why string) corev1.PodStatus {
	t := metav1.NewTime(now)
	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, Ready: false, RestartCount: 5, Started: new(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=" + container + " (" + why + ")",
			}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: msg, StartedAt: t, FinishedAt: t,
			}},
		}},
	}
}

// crashLooping reports whether container of p is in CrashLoopBackOff.
func crashLooping(p *corev1.Pod, container string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}

// containerReady reports whether container of p is Ready.
func containerReady(p *corev1.Pod, container string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.Ready
		}
	}
	return false
}

// hasContainer reports whether p's spec has container.
func hasContainer(p *corev1.Pod, container string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return true
		}
	}
	return false
}
