package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// TestTrimToGPUWork: the GPU pod cache keeps of a running GPU pod its node,
// start and GPU count, and of any other pod nothing the index reads.
func TestTrimToGPUWork(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Hour))
	gpu := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.ResourceGPU: resource1}}},
			{Name: "b", Image: "x"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started},
	}
	eight := gpu.DeepCopy()
	eight.Spec.Containers[0].Resources.Limits[v1alpha1.ResourceGPU] = resource8
	cpu := gpu.DeepCopy()
	cpu.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	pending := gpu.DeepCopy()
	pending.Status.Phase = corev1.PodPending
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		node string
		gpus int
	}{{"a GPU pod", &gpu, "n1", 1}, {"eight GPUs", eight, "n1", 8}, {"a CPU pod", cpu, "", 0}, {"not running yet", pending, "", 0}} {
		obj, err := trimToGPUWork(tt.pod.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*corev1.Pod)
		// The informer may transform what it already holds: again, the
		// same.
		if again, _ := trimToGPUWork(p.DeepCopy()); !equality.Semantic.DeepEqual(again, p) {
			t.Errorf("%s: trimmed twice: %+v, once: %+v", tt.name, again, p)
		}
		if p.Spec.NodeName != tt.node || p.Name != tt.pod.Name || len(p.Labels) != 0 {
			t.Errorf("%s: trimmed to %+v", tt.name, p)
		}
		if tt.gpus > 0 {
			if q := p.Spec.Containers[0].Resources.Limits[gpuCountResource]; q.Value() != int64(tt.gpus) || !p.Status.StartTime.Equal(&started) {
				t.Errorf("%s: %d GPUs since %v, want %d since %v", tt.name, q.Value(), p.Status.StartTime, tt.gpus, started)
			}
		}
	}
}

// TestTrimToGPUWorkKeepsClaims: a pod that may hold a GPU only through
// its ResourceClaims keeps them (the pass decides with the claims it
// read); one that holds a GPU by its resources does not need them.
func TestTrimToGPUWorkKeepsClaims(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Hour))
	claims := []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}}
	statuses := []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: new("train-gpu-x7")}}
	dra := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml"},
		Spec:       corev1.PodSpec{NodeName: "n1", ResourceClaims: claims, Containers: []corev1.Container{{Name: "a"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, ResourceClaimStatuses: statuses},
	}
	obj, _ := trimToGPUWork(dra.DeepCopy())
	p := obj.(*corev1.Pod)
	if p.Spec.NodeName != "n1" || len(p.Spec.ResourceClaims) != 1 || len(p.Status.ResourceClaimStatuses) != 1 {
		t.Fatalf("a DRA pod trimmed to %+v", p)
	}
	if again, _ := trimToGPUWork(p.DeepCopy()); !equality.Semantic.DeepEqual(again, p) {
		t.Errorf("trimmed twice: %+v, once: %+v", again, p)
	}
	held := &claimView{gpus: map[string]int{"ml/train-gpu-x7": 2}}
	if got := planner.ClaimedGPUs(p, held); got != 2 {
		t.Errorf("the trimmed pod's claims hold %d GPUs, want 2", got)
	}
	both := dra.DeepCopy()
	both.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.ResourceGPU: resource1}
	obj, _ = trimToGPUWork(both)
	if p := obj.(*corev1.Pod); len(p.Spec.ResourceClaims) != 0 || p.Spec.Containers[0].Resources.Limits.Name(gpuCountResource, "").Value() != 1 {
		t.Errorf("a pod with a GPU request and a claim trimmed to %+v", p)
	}
}
