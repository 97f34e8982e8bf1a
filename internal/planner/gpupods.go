package planner

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// HoldsGPU says pod p holds a GPU: one of its containers (init containers
// included: a restartable one runs beside the others) requests or is
// limited to a GPU (v1alpha1.ResourceGPU, or a renamed shared GPU such as
// "nvidia.com/gpu.shared") or a MIG device (v1alpha1.ResourceMIGPrefix), it
// claims a device through dynamic resource allocation (its claim may be a
// GPU, and a driver swap under a pod that holds one fails it), or extra
// matches its labels. It is the one reading of a GPU pod: the drain of
// spec.evict.mode GPUPods evicts exactly these.
func HoldsGPU(p *corev1.Pod, extra labels.Selector) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	if extra != nil && !extra.Empty() && extra.Matches(labels.Set(p.Labels)) {
		return true
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if gpuResource(cs[i].Resources.Requests) || gpuResource(cs[i].Resources.Limits) {
				return true
			}
		}
	}
	return false
}

func gpuResource(l corev1.ResourceList) bool {
	for name, q := range l {
		if GPUResource(name) && !q.IsZero() {
			return true
		}
	}
	return false
}

// GPUResource says an extended resource is a GPU or a MIG device:
// v1alpha1.ResourceGPU, a renamed shared GPU ("nvidia.com/gpu.shared"), or
// v1alpha1.ResourceMIGPrefix followed by a profile.
func GPUResource(name corev1.ResourceName) bool {
	n := string(name)
	return n == v1alpha1.ResourceGPU || strings.HasPrefix(n, v1alpha1.ResourceGPU+".") || strings.HasPrefix(n, v1alpha1.ResourceMIGPrefix)
}

// EvictModeOf is spec.evict.mode, v1alpha1.DefaultEvictMode when unset.
func EvictModeOf(spec *v1alpha1.DriverRolloutSpec) v1alpha1.EvictMode {
	if spec.Evict.Mode == "" {
		return v1alpha1.DefaultEvictMode
	}
	return spec.Evict.Mode
}

// GPUPodSelector is spec.evict.gpuPodSelector as a selector; nil when
// unset or unreadable.
func GPUPodSelector(spec *v1alpha1.DriverRolloutSpec) labels.Selector {
	if spec.Evict.GPUPodSelector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.Evict.GPUPodSelector)
	if err != nil {
		return nil
	}
	return sel
}

// WaitingForJobs says a node that started draining at since still waits,
// at now, for the pods spec.evict.waitForCompletion names: its timeout has
// not run out. While it waits, the drain evicts nothing as long as one of
// the pods it would evict is named (JobPods); the planner's drain deadline
// starts after the wait (Settings.JobWait).
func WaitingForJobs(spec *v1alpha1.DriverRolloutSpec, since, now time.Time) bool {
	d := jobWait(spec)
	return d > 0 && now.Before(since.Add(d))
}

// JobPods says which of pods spec.evict.waitForCompletion names; none when
// it names none or its selector is unreadable.
func JobPods(spec *v1alpha1.DriverRolloutSpec, pods []corev1.Pod) []corev1.Pod {
	w := spec.Evict.WaitForCompletion
	if w == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&w.PodSelector)
	if err != nil || sel.Empty() {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}
