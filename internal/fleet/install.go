package fleet

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// OperatorInstall is an operator as it is installed on a cluster: the Helm
// release and namespace render adopts, so that helm-controller upgrades that
// release in place rather than installing a second copy of the operator
// beside it (a release installed as gpu-operator-1712345678 is not the
// release named gpu-operator). Empty fields take the defaults below.
type OperatorInstall struct {
	// Release is the Helm release name.
	Release string `toml:"release"`
	// Namespace is the release's namespace.
	Namespace string `toml:"namespace"`
	// DriverManagement is who runs the GPU driver: DriverManagementNVIDIADriver
	// or DriverManagementClusterPolicy. The GPU Operator's table only: the
	// Network Operator's refuses it.
	DriverManagement string `toml:"driver-management"`
	// ValuesYAML is the values key as written: the release's own chart
	// values, the YAML of a Helm values file (see values.go).
	ValuesYAML string `toml:"values"`
	// Values are ValuesYAML as Helm reads a values file; nil when the
	// table has none. render merges gpufleet's own values over them. They
	// never hold a key gpufleet owns (GPUOperatorOwnedValues,
	// NetworkOperatorOwnedValues): Parse refuses those.
	Values map[string]any `toml:"-"`
}

// The operators' installs when the fleet file says nothing: the release
// names and namespaces of NVIDIA's install instructions, which render has
// always used.
const (
	DefaultGPUOperatorRelease       = "gpu-operator"
	DefaultGPUOperatorNamespace     = "gpu-operator"
	DefaultNetworkOperatorRelease   = "network-operator"
	DefaultNetworkOperatorNamespace = "nvidia-network-operator"
)

// Driver management modes of the GPU Operator.
const (
	// DriverManagementNVIDIADriver (the default) hands the driver to
	// gpufleet's NVIDIADriver objects, one per pool and driver version,
	// between which a node moves when its gpufleet.io/driver label flips.
	DriverManagementNVIDIADriver = "nvidiadriver"
	// DriverManagementClusterPolicy keeps the driver where a default Helm
	// install of the operator puts it: the ClusterPolicy runs one driver
	// DaemonSet (nvidia-driver-daemonset) for the whole cluster, whose
	// version changes in place, and the operator's own upgrade controller
	// moves the nodes (the gpu-operator actuator, gated node by node by
	// gpufleet-controller). It is how a running cluster is adopted without
	// touching its drivers: switching a cluster to NVIDIADriver management
	// below GPU Operator v26.7.0 makes the operator delete that DaemonSet
	// with every driver pod at once.
	DriverManagementClusterPolicy = "clusterpolicy"
)

// GPUOperatorRelease is the Helm release name of the cluster's GPU Operator.
func (c *Cluster) GPUOperatorRelease() string {
	if c.GPUOperator != nil && c.GPUOperator.Release != "" {
		return c.GPUOperator.Release
	}
	return DefaultGPUOperatorRelease
}

// GPUOperatorNamespace is the namespace of the cluster's GPU Operator.
func (c *Cluster) GPUOperatorNamespace() string {
	if c.GPUOperator != nil && c.GPUOperator.Namespace != "" {
		return c.GPUOperator.Namespace
	}
	return DefaultGPUOperatorNamespace
}

// NetworkOperatorRelease is the Helm release name of the cluster's Network
// Operator.
func (c *Cluster) NetworkOperatorRelease() string {
	if c.NetworkOperator != nil && c.NetworkOperator.Release != "" {
		return c.NetworkOperator.Release
	}
	return DefaultNetworkOperatorRelease
}

// NetworkOperatorNamespace is the namespace of the cluster's Network
// Operator.
func (c *Cluster) NetworkOperatorNamespace() string {
	if c.NetworkOperator != nil && c.NetworkOperator.Namespace != "" {
		return c.NetworkOperator.Namespace
	}
	return DefaultNetworkOperatorNamespace
}

// DriverManagement is who runs the cluster's GPU driver:
// DriverManagementNVIDIADriver unless its [clusters.<name>.gpu-operator]
// table says DriverManagementClusterPolicy.
func (c *Cluster) DriverManagement() string {
	if c.GPUOperator != nil && c.GPUOperator.DriverManagement != "" {
		return c.GPUOperator.DriverManagement
	}
	return DriverManagementNVIDIADriver
}

// helmReleaseNameMax is the longest Helm release name Helm accepts (it
// names Secrets and objects with suffixes of its own).
const helmReleaseNameMax = 53

// validateInstall checks one operator table of cluster c. gpu says which:
// only the GPU Operator's has driver-management.
func (f *Fleet) validateInstall(probs *problemList, c *Cluster, in *OperatorInstall, gpu bool) {
	if in == nil {
		return
	}
	table := "network-operator"
	defRelease, defNamespace := DefaultNetworkOperatorRelease, DefaultNetworkOperatorNamespace
	owned := NetworkOperatorOwnedValues
	if gpu {
		table = "gpu-operator"
		defRelease, defNamespace = DefaultGPUOperatorRelease, DefaultGPUOperatorNamespace
		owned = GPUOperatorOwnedValues
	}
	key := joinKey(joinKey("clusters", c.Name), table)
	f.validateValues(probs, c, key, in, owned)
	written := func(field string) bool { _, ok := f.positions.at[key+"."+field]; return ok }
	empty := func(field, def string) {
		probs.add(key+"."+field, "%s must not be empty: leave it out for the default %q", field, def)
	}
	switch {
	case in.Release == "" && written("release"):
		empty("release", defRelease)
	case in.Release != "" && (!dnsLabel.MatchString(in.Release) || len(in.Release) > helmReleaseNameMax):
		probs.add(key+".release", "%q is not a Helm release name: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", in.Release, helmReleaseNameMax)
	}
	switch {
	case in.Namespace == "" && written("namespace"):
		empty("namespace", defNamespace)
	case in.Namespace != "" && (!dnsLabel.MatchString(in.Namespace) || len(in.Namespace) > 63):
		probs.add(key+".namespace", "%q is not a namespace name: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", in.Namespace)
	}
	switch {
	case !gpu && (in.DriverManagement != "" || written("driver-management")):
		probs.add(key+".driver-management", "unknown key: driver management is the GPU Operator's; set it in [%s]", joinKey(joinKey("clusters", c.Name), "gpu-operator"))
	case in.DriverManagement == "" && written("driver-management"):
		empty("driver-management", DriverManagementNVIDIADriver)
	case in.DriverManagement == "", in.DriverManagement == DriverManagementNVIDIADriver:
	case in.DriverManagement == DriverManagementClusterPolicy:
		// The ClusterPolicy's one DaemonSet has one version for every node:
		// only the operator's upgrade controller, released node by node,
		// moves its nodes. gpufleet's own actuator moves a node by flipping
		// its driver label between two NVIDIADrivers, which this mode has
		// none of.
		if f.policies[c.Name].Actuator != v1alpha1.ActuatorGPUOperator {
			probs.add(key+".driver-management", "driver-management = %q needs the gpu-operator actuator (the operator's upgrade controller moves the nodes of the ClusterPolicy's one driver DaemonSet): set [%s] actuator = %q",
				in.DriverManagement, joinKey("policy.clusters", c.Name), v1alpha1.ActuatorGPUOperator)
		}
	default:
		probs.add(key+".driver-management", "%q is not a driver management mode: use %q (gpufleet's NVIDIADrivers, one per pool and driver version) or %q (the ClusterPolicy's one driver DaemonSet, as a default install of the operator runs it)",
			in.DriverManagement, DriverManagementNVIDIADriver, DriverManagementClusterPolicy)
	}
}

// validateInstalls checks every cluster's operator tables. It runs after
// validatePolicy: a ClusterPolicy-managed cluster needs a resolved policy.
func (f *Fleet) validateInstalls(probs *problemList) {
	for _, name := range f.ClusterNames() {
		c := f.Clusters[name]
		f.validateInstall(probs, c, c.GPUOperator, true)
		f.validateInstall(probs, c, c.NetworkOperator, false)
	}
}
