package adopt

import "github.com/gpufleet/gpufleet/internal/dra"

// Cluster is what one kubeconfig context's cluster runs, as Read found it:
// facts, nothing judged. Judge decides what they mean.
type Cluster struct {
	// Context is the kubeconfig context it was read through; the fleet
	// file's cluster is named after it.
	Context string
	// Nodes are the GPU nodes: those labelled nvidia.com/gpu.present=true
	// or carrying a GPU product label, and those the GPU DRA driver
	// publishes slices for, sorted by name.
	Nodes []Node
	// Deployments are the operators' Deployments found in any namespace:
	// those of the GPU Operator chart (helm.sh/chart gpu-operator-<version>
	// or app.kubernetes.io/component=gpu-operator) and of the Network
	// Operator chart (helm.sh/chart network-operator-<version>).
	Deployments []Deployment
	// Releases are the Helm releases of the operators' Deployments, as
	// Helm records them (their values), one per release read.
	Releases []HelmRelease
	// ClusterPolicies are the GPU Operator's ClusterPolicies (normally one;
	// the operator serves the first and marks others ignored).
	ClusterPolicies []ClusterPolicy
	// NVIDIADrivers are the names of the NVIDIADrivers that gpufleet did
	// not write (no app.kubernetes.io/managed-by=gpufleet), sorted.
	NVIDIADrivers []string
}

// Node is one GPU node: its name and labels (GPU Feature Discovery's, the
// operator's and gpufleet's are what Judge reads), and, where dynamic
// resource allocation hands its GPUs out, what NVIDIA's GPU DRA driver
// publishes of it.
type Node struct {
	Name   string
	Labels map[string]string
	// DRA is what the ResourceSlices of the GPU DRA driver (v1alpha1.DRADriverGPU)
	// say of the node: its GPUs' product and driver version. Nil when it
	// has none.
	DRA *dra.Node
	// DevicePluginGPUs counts the GPUs the device plugin offers on the
	// node (allocatable nvidia.com/gpu, its renamed shares and MIG
	// devices). Read only on a cluster with GPU DRA slices, where it tells
	// the two kinds of node apart; 0 elsewhere.
	DevicePluginGPUs int64
}

// Deployment is an operator's Deployment as Helm installed it.
type Deployment struct {
	Namespace, Name string
	Labels          map[string]string
	Annotations     map[string]string
	// Containers are its pod template's containers, in order; the one
	// named after the chart is the operator's.
	Containers []Container
}

// Container is one container of a Deployment's pod template.
type Container struct {
	Name, Image string
}

// ClusterPolicy is what init reads of a ClusterPolicy (nvidia.com/v1).
type ClusterPolicy struct {
	Name string
	// UseNVIDIADriverCRD is spec.driver.useNvidiaDriverCRD: true when
	// NVIDIADriver objects manage the drivers, false (the chart's default)
	// when the ClusterPolicy's own driver DaemonSet does.
	UseNVIDIADriverCRD bool
	// DriverEnabled is spec.driver.enabled (nil when unset: the
	// operator's default, true).
	DriverEnabled *bool
	// DriverVersion is spec.driver.version, the driver the ClusterPolicy's
	// DaemonSet installs (a version, a branch, or empty).
	DriverVersion string
	// UsePrecompiled is spec.driver.usePrecompiled.
	UsePrecompiled bool
	// State is status.state: ready, notReady, ignored (not the one the
	// operator serves)…
	State string
}

// StateIgnored is the status.state of a ClusterPolicy the operator does
// not serve (it serves one per cluster).
const StateIgnored = "ignored"
