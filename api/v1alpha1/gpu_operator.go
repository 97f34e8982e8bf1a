package v1alpha1

// The GPU Operator's kinds gpufleet writes (render writes NVIDIADrivers) and
// reads (the gate, explain, the dashboard and init read ClusterPolicies and
// NVIDIADrivers). They are here, as API versions and kinds, because render
// must not import the gate; the gate's ReadKinds (gate.KindClusterPolicy,
// gate.KindNVIDIADriver), which every reader of a cluster takes its GVKs
// from, are built from them.
const (
	// GroupNVIDIA is the GPU Operator's API group.
	GroupNVIDIA = "nvidia.com"
	// ClusterPolicyAPIVersion is the apiVersion of KindClusterPolicy.
	ClusterPolicyAPIVersion = GroupNVIDIA + "/v1"
	// KindClusterPolicy is the operator's one cluster-wide configuration.
	KindClusterPolicy = "ClusterPolicy"
	// NVIDIADriverAPIVersion is the apiVersion of KindNVIDIADriver.
	NVIDIADriverAPIVersion = GroupNVIDIA + "/v1alpha1"
	// KindNVIDIADriver is one driver DaemonSet (set) of the operator's:
	// render writes one per pool and driver version.
	KindNVIDIADriver = "NVIDIADriver"
)

// The GPU Operator's driver pods, as the lifecycle controller finds them
// on a node: the NVIDIADriver and the ClusterPolicy driver DaemonSets both
// label their pods LabelComponent=ComponentNVIDIADriver.
const (
	// LabelComponent is the recommended Kubernetes label
	// app.kubernetes.io/component. The GPU Operator's chart sets it to
	// ComponentNVIDIADriver on the driver pods and to "gpu-operator" on
	// the operator's own Deployment (which init finds by it).
	LabelComponent = "app.kubernetes.io/component"
	// ComponentNVIDIADriver is LabelComponent's value on the driver pods.
	ComponentNVIDIADriver = "nvidia-driver"
)
