package nodesim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncPods plays the kubelet for the pods bound to one simulated node:
// it finishes deletions whose grace period is over and, with RunPods,
// starts pending pods.
func (s *Sim) syncPods(ctx context.Context, bound []*corev1.Pod, now time.Time) error {
	var errs []error
	for _, p := range bound {
		switch {
		case p.DeletionTimestamp != nil:
			if graceOver(p, now) {
				s.opts.Logf("nodesim: node %s: pod %s/%s terminated", p.Spec.NodeName, p.Namespace, p.Name)
				errs = append(errs, s.deletePodNow(ctx, p.Namespace, p.Name, p.UID))
			}
		case s.opts.RunPods && !isDriverPod(p) && (p.Status.Phase == "" || p.Status.Phase == corev1.PodPending):
			errs = append(errs, s.startPod(ctx, p, now))
		}
	}
	return errors.Join(errs...)
}

// graceOver reports whether a terminating pod's grace period has ended.
// The API server sets deletionTimestamp to the deletion time plus the grace
// period, so that is when a kubelet would have killed the containers.
func graceOver(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && !now.Before(p.DeletionTimestamp.Time)
}

func isDriverPod(p *corev1.Pod) bool { return p.Labels[LabelDriverPodApp] == DriverPodApp }

// deletePodNow deletes a pod with grace period 0, as the kubelet does once
// the containers are gone. The UID precondition spares a pod of the same
// name created since.
func (s *Sim) deletePodNow(ctx context.Context, ns, name string, uid types.UID) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	opts := []client.DeleteOption{client.GracePeriodSeconds(0)}
	if uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	if err := s.c.Delete(ctx, p, opts...); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// startPod marks p Running with every container ready.
func (s *Sim) startPod(ctx context.Context, p *corev1.Pod, now time.Time) error {
	t := metav1.NewTime(now)
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &t
	p.Status.PodIP = "10.0.0.1"
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
	if err := s.c.Status().Update(ctx, p); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("start pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	s.opts.Logf("nodesim: node %s: pod %s/%s running", p.Spec.NodeName, p.Namespace, p.Name)
	return nil
}
