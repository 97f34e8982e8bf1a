package nodesimtest

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// DRANamespace holds the simulated DRA driver's kubelet plugin, as the
// nvidia-dra-driver-gpu chart's release namespace does.
const DRANamespace = "nvidia-dra-driver-gpu"

// The device classes NVIDIA's DRA driver installs, as the chart writes
// them: a class per kind of device, selecting its driver's devices.
const (
	DeviceClassGPU     = "gpu.nvidia.com"
	DeviceClassChannel = "compute-domain-default-channel.nvidia.com"
)

// DRADriver installs what the nvidia-dra-driver-gpu chart would for the
// simulated DRA pools, unless it exists: its device classes, and its
// kubelet plugin DaemonSet on the nodes labelled nodesim.LabelDRANode,
// its pods labelled as the chart labels them
// (v1alpha1.DefaultDRAKubeletPluginSelector). The DaemonSet keeps off a
// node the lifecycle controller paused it on (v1alpha1.LabelDRAPlugin
// paused): the node affinity an operator sets through the chart's
// kubeletPlugin.affinity for gpufleet.
func DRADriver(ctx context.Context, c client.Client) error {
	classes := map[string]string{DeviceClassGPU: v1alpha1.DRADriverGPU, DeviceClassChannel: v1alpha1.DRADriverComputeDomain}
	for name, driver := range classes {
		dc := &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
				CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == '%s'", driver)},
			}}},
		}
		if err := c.Create(ctx, dc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("device class %s: %w", name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DRANamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", DRANamespace, err)
	}
	sel, err := metav1.ParseToLabelSelector(v1alpha1.DefaultDRAKubeletPluginSelector)
	if err != nil {
		return err
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dra-driver-gpu-kubelet-plugin", Namespace: DRANamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: sel,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{nodesim.LabelDRANode: "true"},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{
								Key: v1alpha1.LabelDRAPlugin, Operator: corev1.NodeSelectorOpNotIn, Values: []string{v1alpha1.DRAPluginPaused},
							}},
						}}},
					}},
					Containers:        []corev1.Container{{Name: "gpus", Image: "k8s-dra-driver-gpu:v25.8.0"}},
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName: "system-node-critical",
				},
			},
		},
	}
	if err := c.Create(ctx, ds); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("DRA kubelet plugin DaemonSet: %w", err)
	}
	return nil
}
