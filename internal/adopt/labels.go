package adopt

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/render"
)

// The node labels init reads. GPU Feature Discovery sets the product, MIG
// and driver labels once the driver is loaded; the GPU Operator sets
// gpu.present (from Node Feature Discovery's PCI labels, before any driver),
// gpu.deploy.driver and its upgrade state. gpufleet's own labels are in
// api/v1alpha1.
const (
	// LabelGPUPresent marks a node with an NVIDIA GPU, driver or not.
	LabelGPUPresent = render.LabelGPUPresent
	// LabelGPUProduct is the GPU as GPU Feature Discovery names it, with a
	// "-MIG-<profile>" suffix under MIG's single strategy and "-SHARED"
	// under time-slicing or MPS (see BaseProduct).
	LabelGPUProduct = render.LabelGPUProduct
	// LabelMIGConfig is mig-manager's layout of the node's GPUs
	// (all-disabled, all-1g.10gb, all-balanced…); absent means no MIG.
	LabelMIGConfig = "nvidia.com/mig.config"
	// LabelMIGConfigState is mig-manager's progress applying it: success,
	// pending, rebooting or failed.
	LabelMIGConfigState = "nvidia.com/mig.config.state"
	// LabelDeployDriver is the operator's switch for its driver on the
	// node: "pre-installed" when the host has its own driver, "false" when
	// an admin turned the operator's driver off there.
	LabelDeployDriver = "nvidia.com/gpu.deploy.driver"
	// LabelDriverFull and LabelDriverMajor are the driver the node runs,
	// as GPU Feature Discovery reports it.
	LabelDriverFull  = v1alpha1.LabelGFDDriverFull
	LabelDriverMajor = v1alpha1.LabelGFDDriverMajor
	// LabelUpgradeState is the operator's upgrade state of the node.
	LabelUpgradeState = v1alpha1.LabelOperatorUpgradeState
	// LabelDriver is the driver gpufleet wants on a node; render's
	// NVIDIADrivers select by it.
	LabelDriver = v1alpha1.LabelDriver
	// LabelPool is the fleet's pool a node belongs to: a node that
	// carries it keeps that pool's name.
	LabelPool = v1alpha1.LabelPool
)

// Values of the labels above that init acts on.
const (
	// MIGDisabled is the mig.config of a MIG-capable GPU not partitioned.
	MIGDisabled = "all-disabled"
	// MIGStateSuccess is the mig.config.state of a layout in place.
	MIGStateSuccess = "success"
	// DeployDriverPreinstalled is gpu.deploy.driver on a node whose host
	// has its own driver: the operator does not manage it.
	DeployDriverPreinstalled = "pre-installed"
	// DeployDriverOff is gpu.deploy.driver on a node an admin took out of
	// the operator's driver management.
	DeployDriverOff = "false"
)

// The labels and annotations Helm charts put on what they install, by
// which init finds an operator, its chart version and its Helm release.
const (
	// LabelHelmChart is "<chart>-<chart version>" (a "+" in the version
	// written "_").
	LabelHelmChart = "helm.sh/chart"
	// LabelComponent is the GPU Operator chart's "gpu-operator" on its
	// Deployment, whatever the chart's name or version.
	LabelComponent = "app.kubernetes.io/component"
	// LabelInstance is the Helm release name, by the charts' own helpers.
	LabelInstance = "app.kubernetes.io/instance"
	// AnnotationReleaseName and AnnotationReleaseNamespace are Helm's own
	// record of the release an object belongs to (Helm 3.2 on).
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
	// LabelManagedBy is "gpufleet" on what gpufleet render writes.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// The chart names of the two operators.
const (
	ChartGPUOperator     = "gpu-operator"
	ChartNetworkOperator = "network-operator"
)
