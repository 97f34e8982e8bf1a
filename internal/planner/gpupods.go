package planner

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// HoldsGPU says pod p holds a GPU: one of its containers (init containers
// included: a restartable one runs beside the others) requests or is
// limited to a GPU (v1alpha1.ResourceGPU, or a renamed shared GPU such as
// "nvidia.com/gpu.shared") or a MIG device (v1alpha1.ResourceMIGPrefix),
// one of its ResourceClaims has a device of a GPU DRA driver allocated
// (claims.GPUs: spec.dra.drivers, NVIDIA's by default), or extra matches
// its labels. A pod whose only claims are of other drivers (a NIC) holds
// none. With claims nil (the cluster's claims were not read), any claim
// counts: a driver swap under a pod that holds a GPU fails it, so an
// unknown claim is taken for one. It is the one reading of a GPU pod: the
// drain of spec.evict.mode GPUPods evicts exactly these.
func HoldsGPU(p *corev1.Pod, extra labels.Selector, claims Claims) bool {
	if len(p.Spec.ResourceClaims) > 0 && (claims == nil || ClaimedGPUs(p, claims) > 0) {
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

// Claims tells, of the cluster's ResourceClaims, how many devices of a
// GPU DRA driver one has allocated (see GPUDevices): 0 for a claim of
// other drivers, one not allocated, or one not found.
type Claims interface {
	GPUs(namespace, name string) int
}

// ClaimedGPUs is how many devices of a GPU DRA driver pod p's claims have
// allocated.
func ClaimedGPUs(p *corev1.Pod, claims Claims) int {
	n := 0
	for _, name := range PodClaimNames(p) {
		n += claims.GPUs(p.Namespace, name)
	}
	return n
}

// PodClaimNames are the names of pod p's ResourceClaims, in its
// namespace: a claim the pod names, or the one made for it from a
// template, which the pod's status.resourceClaimStatuses names (none yet:
// nothing is allocated for it).
func PodClaimNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.ResourceClaims {
		switch {
		case c.ResourceClaimName != nil && *c.ResourceClaimName != "":
			out = append(out, *c.ResourceClaimName)
		case c.ResourceClaimTemplateName != nil:
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == c.Name && st.ResourceClaimName != nil && *st.ResourceClaimName != "" {
					out = append(out, *st.ResourceClaimName)
				}
			}
		}
	}
	return out
}

// GPUDevices is how many of claim c's allocated devices are of one of the
// GPU DRA drivers: status.allocation.devices.results[].driver.
func GPUDevices(c *resourcev1.ResourceClaim, drivers []string) int {
	if c.Status.Allocation == nil {
		return 0
	}
	n := 0
	for _, r := range c.Status.Allocation.Devices.Results {
		if slices.Contains(drivers, r.Driver) {
			n++
		}
	}
	return n
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
