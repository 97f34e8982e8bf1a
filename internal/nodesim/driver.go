package nodesim

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// DriverDaemonSet is the name of the DaemonSet that owns the simulated
// driver pods. Nothing reconciles it; it exists so that drain code sees the
// driver pods as DaemonSet pods and skips them, as it must on real clusters.
const DriverDaemonSet = "nvidia-driver-daemonset"

// DriverContainer is the name of the driver container in the GPU
// Operator's driver pods; its image tag carries the driver version.
const DriverContainer = "nvidia-driver-ctr"

// ensureDriverDaemonSet creates the driver namespace and DaemonSet unless
// they exist, and remembers the DaemonSet's UID for owner references.
func (s *Sim) ensureDriverDaemonSet(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.opts.DriverNamespace}}
	if err := s.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	labels := map[string]string{LabelDriverPodApp: DriverPodApp}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: DriverDaemonSet, Namespace: s.opts.DriverNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{v1alpha1.LabelGPUPresent: "true"},
					Containers:   []corev1.Container{{Name: DriverContainer, Image: "nvidia/driver"}},
				},
			},
		},
	}
	if err := s.c.Create(ctx, ds); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DaemonSet %s: %w", DriverDaemonSet, err)
	}
	return nil
}

// driverPodName is unique per node and version, so a new version's pod never
// collides with the old one on its way out.
func driverPodName(node, version string) string {
	return "nvidia-driver-daemonset-" + node + "-" + strings.ReplaceAll(version, ".", "-")
}

// createDriverPod creates the driver pod installing version on node. With
// installed it starts Ready (the node came with the driver); otherwise it
// starts installing at now.
func (s *Sim) createDriverPod(ctx context.Context, node, version string, now time.Time, installed bool) error {
	ds := &appsv1.DaemonSet{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.opts.DriverNamespace, Name: DriverDaemonSet}, ds); err != nil {
		return fmt.Errorf("driver DaemonSet: %w", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      driverPodName(node, version),
			Namespace: s.opts.DriverNamespace,
			Labels: map[string]string{
				LabelDriverPodApp:       DriverPodApp,
				v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver,
				LabelDriverPodVersion:   version,
			},
			Annotations: map[string]string{AnnotationInstallStarted: now.UTC().Format(time.RFC3339Nano)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: DriverContainer, Image: "nvidia/driver:" + version}},
			// The real driver pod tolerates every taint, so a cordon or a
			// quarantine taint never evicts it.
			Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			PriorityClassName: "system-node-critical",
		},
	}
	if err := s.c.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("node %s: create driver pod %s: %w", node, version, err)
	}
	if installed {
		return s.setDriverPodStatus(ctx, pod.Name, pod.UID, driverPodRunning(now))
	}
	s.opts.Logf("nodesim: node %s: installing driver %s", node, version)
	return s.setDriverPodStatus(ctx, pod.Name, pod.UID, driverPodInstalling(now))
}

// syncDriver plays the driver DaemonSet on node n, given the pods bound to
// it in this pass's snapshot: see planDriver.
func (s *Sim) syncDriver(ctx context.Context, n *corev1.Node, bound []*corev1.Pod, now time.Time) error {
	node := n.Name
	var pods []driverPod
	uids := map[string]types.UID{}
	for _, p := range bound {
		if p.Namespace != s.opts.DriverNamespace || !isDriverPod(p) || p.DeletionTimestamp != nil {
			continue
		}
		started, _ := time.Parse(time.RFC3339Nano, p.Annotations[AnnotationInstallStarted])
		pods = append(pods, driverPod{
			name: p.Name, version: p.Labels[LabelDriverPodVersion], started: started,
			ready: podReady(p), crashing: crashLooping(p),
		})
		uids[p.Name] = p.UID
	}
	want := n.Labels[v1alpha1.LabelDriver]
	plan := planDriver(want, pods, now, s.opts.InstallTime, s.isBad)
	for _, name := range plan.remove {
		s.opts.Logf("nodesim: node %s: removing driver pod %s (%s)", node, name, plan.reason)
		if err := s.deletePodNow(ctx, s.opts.DriverNamespace, name, uids[name]); err != nil {
			return err
		}
	}
	switch {
	case plan.create:
		return s.createDriverPod(ctx, node, want, now, false)
	case plan.complete != "":
		if err := s.setDriverPodStatus(ctx, plan.complete, uids[plan.complete], driverPodRunning(now)); err != nil {
			return err
		}
		// GPU Feature Discovery relabels the node once the new driver runs.
		s.opts.Logf("nodesim: node %s: %s", node, plan.reason)
		return s.setLoaded(ctx, node, want)
	case plan.fail != "":
		s.opts.Logf("nodesim: node %s: %s", node, plan.reason)
		return s.setDriverPodStatus(ctx, plan.fail, uids[plan.fail], driverPodCrashing(now))
	}
	return nil
}

// setDriverPodStatus writes status to the driver pod name, if it is still
// the pod with uid.
func (s *Sim) setDriverPodStatus(ctx context.Context, name string, uid types.UID, status corev1.PodStatus) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.opts.DriverNamespace, Name: name}, p); err != nil {
			return err
		}
		if p.UID != uid {
			return nil
		}
		status.QOSClass = p.Status.QOSClass
		p.Status = status
		return s.c.Status().Update(ctx, p)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("driver pod %s: update status: %w", name, err)
	}
	return nil
}

func driverPodInstalling(now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now)
	return corev1.PodStatus{
		Phase:     corev1.PodPending,
		StartTime: &t,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: DriverContainer, Image: "nvidia/driver",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ContainerCreating", Message: "installing the driver (simulated)",
			}},
		}},
	}
}

func driverPodRunning(now time.Time) corev1.PodStatus {
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
			Name: DriverContainer, Image: "nvidia/driver", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

// driverPodCrashing is the status of a driver whose install failed: the
// container keeps restarting, as a driver that cannot load does.
func driverPodCrashing(now time.Time) corev1.PodStatus {
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
			Name: DriverContainer, Image: "nvidia/driver", Ready: false, RestartCount: 5, Started: ptr.To(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=" + DriverContainer + " (simulated install failure)",
			}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: "could not load the NVIDIA kernel module (simulated)",
				StartedAt: t, FinishedAt: t,
			}},
		}},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func crashLooping(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}
