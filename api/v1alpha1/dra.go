package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DRASpec says how the rollout tells the GPUs that dynamic resource
// allocation (DRA, resource.k8s.io/v1) hands out, and where NVIDIA's DRA
// kubelet plugin runs. Both fields default (DRADriversOf,
// DRAKubeletPluginSelectorOf), so a rollout handles DRA nodes with no
// setting at all; a node without the plugin and without a GPU claim is
// rolled as before.
//
// On a node that runs the plugin, the driver swap goes in this order: the
// pods holding a GPU claim are evicted and their claims released; then the
// plugin is stopped (LabelDRAPlugin=paused, which its DaemonSet's node
// affinity must exclude); then the driver label moves; then the plugin is
// let back, and the node is validated only once the plugin is Ready and
// its ResourceSlices publish the new driver version. The plugin keeps the
// old driver open and serves stale device data across a reload if it runs
// on (k8s-driver-manager PR #203, gpu-operator #2509), and unpreparing a
// claim needs the plugin, so stopping it first hangs the evictions
// (k8s-driver-manager PR #217).
type DRASpec struct {
	// Drivers are the DRA drivers whose allocated devices make a pod a GPU
	// pod: a pod holding a claim with a device of one of them is evicted
	// like a pod requesting nvidia.com/gpu; a pod whose only claims are of
	// other drivers (a NIC) is not. Unset, DefaultDRADrivers.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +optional
	Drivers []string `json:"drivers,omitempty"`

	// KubeletPluginSelector selects the pods of the DRA driver's kubelet
	// plugin. Unset, DefaultDRAKubeletPluginSelector: the labels NVIDIA's
	// nvidia-dra-driver-gpu chart puts on its kubelet plugin pods.
	// +optional
	KubeletPluginSelector *metav1.LabelSelector `json:"kubeletPluginSelector,omitempty"`
}

// The DRA drivers of NVIDIA's DRA driver for GPUs (the nvidia-dra-driver-gpu
// chart): its GPUs and MIG devices come from gpu.nvidia.com, the IMEX
// channels of a ComputeDomain from compute-domain.nvidia.com. (The device
// classes have other names: gpu.nvidia.com, mig.nvidia.com,
// compute-domain-default-channel.nvidia.com.)
const (
	DRADriverGPU           = "gpu.nvidia.com"
	DRADriverComputeDomain = "compute-domain.nvidia.com"
)

// DefaultDRADrivers is spec.dra.drivers unset.
var DefaultDRADrivers = []string{DRADriverGPU, DRADriverComputeDomain}

// DefaultDRAKubeletPluginSelector is spec.dra.kubeletPluginSelector unset:
// the nvidia-dra-driver-gpu chart labels its kubelet plugin pods with the
// chart's name and "<chart>-component: kubelet-plugin".
const DefaultDRAKubeletPluginSelector = "app.kubernetes.io/name=nvidia-dra-driver-gpu,nvidia-dra-driver-gpu-component=kubelet-plugin"

// DRAAttributeDriverVersion is the device attribute in which
// gpu.nvidia.com's ResourceSlices publish the driver version, in semver
// form: driver 580.95.05 is written 580.95.5.
const DRAAttributeDriverVersion = "driverVersion"

// LabelDRAPlugin is the node label by which gpufleet stops the DRA kubelet
// plugin on a node for its driver swap: "paused" while the driver is
// swapped, "resumed" from the new driver's install until the node is back
// in service (so a restarted controller still waits for the plugin), and
// absent otherwise. The plugin's DaemonSet must not run where it says
// paused (a node affinity "gpufleet.io/dra-plugin NotIn [paused]"): the
// DaemonSet controller then deletes the plugin pod there, and puts it
// back when the label changes.
const LabelDRAPlugin = "gpufleet.io/dra-plugin"

// LabelDRAPlugin's values.
const (
	DRAPluginPaused  = "paused"
	DRAPluginResumed = "resumed"
)

// LabelComputeDomain is the node label NVIDIA's DRA driver puts on the
// nodes of a ComputeDomain (its value the ComputeDomain's UID) while a
// channel of it is prepared there. A maintenanceDomain naming it makes
// the ComputeDomains the maintenance domains: the controller also reads a
// node's domain from the ComputeDomain channel claims allocated on it, and
// records it on the node when it starts (AnnotationComputeDomain), as the
// label and the claims go with the workloads the drain evicts.
const LabelComputeDomain = "resource.nvidia.com/computeDomain"

// AnnotationComputeDomain records the ComputeDomain a node was in when its
// maintenance began, for a maintenanceDomain naming LabelComputeDomain: the
// domain holds together until its last node is back in service.
const AnnotationComputeDomain = "gpufleet.io/compute-domain"

// DRADriversOf is spec.dra.drivers with the default applied.
func DRADriversOf(spec *DriverRolloutSpec) []string {
	if len(spec.DRA.Drivers) == 0 {
		return DefaultDRADrivers
	}
	return spec.DRA.Drivers
}

// IsDRADriver reports whether driver is one of spec's GPU DRA drivers.
func IsDRADriver(spec *DriverRolloutSpec, driver string) bool {
	return slices.Contains(DRADriversOf(spec), driver)
}

// DRAKubeletPluginSelectorOf is spec.dra.kubeletPluginSelector with the
// default applied.
func DRAKubeletPluginSelectorOf(spec *DriverRolloutSpec) *metav1.LabelSelector {
	if spec.DRA.KubeletPluginSelector != nil {
		return spec.DRA.KubeletPluginSelector
	}
	sel, err := metav1.ParseToLabelSelector(DefaultDRAKubeletPluginSelector)
	if err != nil {
		panic("v1alpha1: DefaultDRAKubeletPluginSelector: " + err.Error())
	}
	return sel
}
