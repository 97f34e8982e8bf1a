package v1alpha1

import "regexp"

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

// driverTagVersion matches the driver version at the start of a GPU driver
// image's tag.
var driverTagVersion = regexp.MustCompile(`^[0-9]+(\.[0-9]+){1,3}`)

// DriverTagVersion is the driver version a GPU driver image's tag names:
// the operator's driver images are tagged "<version>-<os><os version>"
// ("580.95.05-ubuntu22.04" names 580.95.05). It is "" where the tag names
// none: a precompiled driver's "570-5.15.0-139-generic" (a branch and a
// kernel), "latest", or a version run on into more digits or dots.
func DriverTagVersion(tag string) string {
	v := driverTagVersion.FindString(tag)
	if v == "" || len(v) < len(tag) && (tag[len(v)] == '.' || tag[len(v)] >= '0' && tag[len(v)] <= '9') {
		return ""
	}
	return v
}
