package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// TestOFEDMarks: a hold writes the OFED skip label, a release removes it
// (with the operator's record that a cordoned node was cordoned before
// its upgrade), and neither touches the GPU Operator's own skip label.
func TestOFEDMarks(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelOperatorUpgradeSkip: "true"}, Annotations: map[string]string{}}}
	ofedMarks(n, planner.Transition{HoldOFED: true})
	if n.Labels[v1alpha1.LabelOFEDUpgradeSkip] != "true" {
		t.Fatalf("hold: labels %v", n.Labels)
	}
	ofedMarks(n, planner.Transition{ReleaseOFED: true})
	if _, ok := n.Labels[v1alpha1.LabelOFEDUpgradeSkip]; ok || n.Labels[v1alpha1.LabelOperatorUpgradeSkip] != "true" {
		t.Fatalf("release: labels %v", n.Labels)
	}
	if _, ok := n.Annotations[v1alpha1.AnnotationOFEDInitialUnschedulable]; ok {
		t.Fatal("the release of a schedulable node records it cordoned")
	}
	// A node released in its maintenance is cordoned: the release tells
	// the Network Operator to leave it so.
	n.Labels[v1alpha1.LabelOFEDUpgradeSkip], n.Spec.Unschedulable = "true", true
	ofedMarks(n, planner.Transition{ReleaseOFED: true})
	if n.Annotations[v1alpha1.AnnotationOFEDInitialUnschedulable] != "true" {
		t.Fatalf("release of a cordoned node: annotations %v", n.Annotations)
	}
}

// TestContainerTag reads the OFED version from the OFED container's image.
func TestContainerTag(t *testing.T) {
	p := pod("mofed", func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{
			{Name: "sidecar", Image: "busybox:1.36"},
			{Name: v1alpha1.OFEDContainer, Image: "nvcr.io/nvidia/mellanox/doca-driver:doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		}
	})
	got := containerTag(&p, v1alpha1.OFEDContainer)
	if got != "doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64" || !v1alpha1.OFEDMatches(got, "doca3.2.0-25.10-1.2.8.0-2") || v1alpha1.OFEDMatches(got, "doca3.2.0-25.10-1.2.8.0") {
		t.Fatalf("tag %q", got)
	}
	if containerTag(&p, "none") != "" {
		t.Fatal("a missing container has a tag")
	}
}

// TestDriverOlderThan: a driver pod whose driver container started before
// OFED became Ready is stale; one started in that second or after, one
// whose driver waits still (created before OFED, its init waiting for it),
// and one being deleted (the restart under way) are not; the peermem
// container's own restarts do not count.
func TestDriverOlderThan(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver})
	ready := time.Date(2026, 6, 1, 10, 0, 0, 500_000_000, time.UTC)
	driver := func(started time.Time, deleting bool) corev1.Pod {
		return pod("d", func(p *corev1.Pod) {
			p.Labels = map[string]string{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}
			p.CreationTimestamp = metav1.NewTime(ready.Add(-time.Hour))
			cs := corev1.ContainerStatus{Name: "nvidia-driver-ctr", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}
			if !started.IsZero() {
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs,
				{Name: v1alpha1.PeermemContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(ready.Add(-time.Hour))}}}}
			if started.IsZero() {
				p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1]
			}
			if deleting {
				p.DeletionTimestamp = &metav1.Time{Time: ready}
			}
		})
	}
	for _, tt := range []struct {
		name string
		pods []corev1.Pod
		want bool
	}{
		{"started before", []corev1.Pod{driver(ready.Add(-time.Minute), false)}, true},
		{"started in the same second", []corev1.Pod{driver(ready.Truncate(time.Second), false)}, false},
		{"started after", []corev1.Pod{driver(ready.Add(time.Second), false)}, false},
		{"created before, its driver waiting", []corev1.Pod{driver(time.Time{}, false)}, false},
		{"old one being deleted", []corev1.Pod{driver(ready.Add(-time.Minute), true)}, false},
		{"other pods", []corev1.Pod{pod("app", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(ready.Add(-time.Hour))}}}}
		})}, false},
	} {
		if got := driverOlderThan(tt.pods, sel, ready); got != tt.want {
			t.Errorf("%s: stale %t, want %t", tt.name, got, tt.want)
		}
	}
}
