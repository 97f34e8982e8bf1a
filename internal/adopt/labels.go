package adopt

// Values of the node labels init acts on (v1alpha1.LabelMIGConfig,
// v1alpha1.LabelMIGConfigState, v1alpha1.LabelDeployDriver).
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
// which init finds an operator's Helm release (the chart and its version
// by v1alpha1.LabelHelmChart, the GPU Operator's Deployment also by
// v1alpha1.LabelComponent, "gpu-operator" whatever the chart's name or
// version).
const (
	// LabelInstance is the Helm release name, by the charts' own helpers.
	LabelInstance = "app.kubernetes.io/instance"
	// AnnotationReleaseName and AnnotationReleaseNamespace are Helm's own
	// record of the release an object belongs to (Helm 3.2 on).
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

// The chart names of the two operators.
const (
	ChartGPUOperator     = "gpu-operator"
	ChartNetworkOperator = "network-operator"
)
