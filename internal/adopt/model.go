package adopt

import (
	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Fleet is the fleet file init writes: what runs, as one stable release,
// the clusters with their pools and their operators as found, the waves,
// and a conservative rollout policy. Judge builds it; Write prints it.
type Fleet struct {
	// Contexts are the kubeconfig contexts read, sorted.
	Contexts []string `json:"contexts"`
	// ChartRepository and ChartMode are [charts]: where the operator
	// charts come from and how render writes them.
	ChartRepository string `json:"chartRepository"`
	ChartMode       string `json:"chartMode"`
	// Release is the stable release: what every cluster runs.
	Release Release `json:"release"`
	// Clusters are sorted by name.
	Clusters []*FleetCluster `json:"clusters"`
	Waves    []Wave          `json:"waves"`
}

// Release is the one release init writes, [promotion] stable.
type Release struct {
	Name        string `json:"name"`
	GPUOperator string `json:"gpuOperator"`
	// NetworkOperator is empty when no cluster runs one: the release then
	// has no network-operator key and installs none.
	NetworkOperator string `json:"networkOperator,omitempty"`
	// Driver is the full driver version GPU Feature Discovery reports, or
	// its branch when the operator installs precompiled drivers.
	Driver      string `json:"driver"`
	Precompiled bool   `json:"precompiled,omitempty"`
}

// FleetCluster is one cluster of the fleet file: a kubeconfig context.
type FleetCluster struct {
	Name        string `json:"name"`
	Context     string `json:"context"`
	Environment string `json:"environment"`
	// GPUNodes counts the GPU nodes read (in pools or not).
	GPUNodes int     `json:"gpuNodes"`
	Pools    []*Pool `json:"pools"`
	// GPUOperator is the GPU Operator as installed; nil when none was
	// found (a problem).
	GPUOperator *Install `json:"gpuOperator,omitempty"`
	// NetworkOperator is the Network Operator as installed; nil when the
	// cluster runs none.
	NetworkOperator *Install `json:"networkOperator,omitempty"`
}

// Pool is a set of GPU nodes of one product and MIG layout.
type Pool struct {
	Name string `json:"name"`
	// Labelled says the name came from the nodes' gpufleet.io/pool label
	// rather than from the product.
	Labelled bool   `json:"labelled,omitempty"`
	Product  string `json:"product"`
	// MIG is the mig-manager layout; empty without MIG.
	MIG string `json:"mig,omitempty"`
	// Driver is the driver the pool's nodes run; empty when they differ
	// (a problem).
	Driver string `json:"driver,omitempty"`
	// DRA says dynamic resource allocation hands out its nodes' GPUs:
	// the GPU DRA driver (v1alpha1.DRADriverGPU) publishes them in ResourceSlices,
	// and the device plugin offers none.
	DRA bool `json:"dra,omitempty"`
	// Nodes are the names of its nodes, sorted.
	Nodes []string `json:"nodes"`
}

// Install is an operator as Helm installed it.
type Install struct {
	// Deployment is the operator's Deployment, namespace/name.
	Deployment string `json:"deployment"`
	// Release and Namespace are its Helm release.
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Version is its chart version, with the leading "v" the fleet file
	// writes; VersionFrom says where it was read (VersionFromChartLabel or
	// VersionFromImage).
	Version     string `json:"version"`
	VersionFrom string `json:"versionFrom"`
	// DriverManagement is the GPU Operator's: DriverManagementClusterPolicy
	// or DriverManagementNVIDIADriver, from its ClusterPolicy. Empty for
	// the Network Operator.
	DriverManagement string `json:"driverManagement,omitempty"`
	// ClusterPolicy names the ClusterPolicy it was read from.
	ClusterPolicy string `json:"clusterPolicy,omitempty"`
	// Values are the release's own chart values, less the keys gpufleet
	// sets (ValuesDropped): the fleet file's values key. Nil when it has
	// none.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFrom says where they were read: the Helm release's record
	// ("Secret <namespace>/sh.helm.release.v1.<release>.v<revision>", or a
	// ConfigMap), or ValuesFromFlag.
	ValuesFrom string `json:"valuesFrom,omitempty"`
	// ValuesDropped are the keys of the release's values that gpufleet
	// sets itself, dropped from Values (render writes them from the fleet
	// file), sorted.
	ValuesDropped []string `json:"valuesDropped,omitempty"`
}

// Where an operator's version was read: its Deployment's chart label
// (named by the label's key) or its image tag.
const (
	VersionFromChartLabel = v1alpha1.LabelHelmChart
	VersionFromImage      = "image"
)

// The GPU Operator's driver management modes, as the fleet file writes
// them in [clusters.<name>.gpu-operator] driver-management.
const (
	DriverManagementClusterPolicy = fleet.DriverManagementClusterPolicy
	DriverManagementNVIDIADriver  = fleet.DriverManagementNVIDIADriver
)

// Wave is one [[waves]] table.
type Wave struct {
	Name             string   `json:"name"`
	Clusters         []string `json:"clusters"`
	Canary           string   `json:"canary,omitempty"`
	PauseAfterCanary bool     `json:"pauseAfterCanary,omitempty"`
	RequireApproval  bool     `json:"requireApproval,omitempty"`
}
