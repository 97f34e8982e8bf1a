package fleet

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// DefaultChartRepository is where the NVIDIA GPU Operator and Network
// Operator charts come from unless [charts] says otherwise.
const DefaultChartRepository = "https://helm.ngc.nvidia.com/nvidia"

// Fleet is a validated fleet file. Build it with Load or Parse.
type Fleet struct {
	// Path is the file the fleet was read from, for messages.
	Path string

	Charts Charts
	// Controller is where gpufleet-controller's image comes from.
	Controller Controller
	Releases   map[string]*Release
	Clusters   map[string]*Cluster
	Waves      []*Wave
	Promotion  Promotion
	// Stack is the LLM serving stack; nil when the fleet file has none.
	Stack *Stack
	// GitOps says which engine applies each cluster's folder (EngineFor).
	GitOps GitOps

	policy rawPolicy
	gitops rawGitOps
	// policies are the resolved policies of the clusters, and fleetPolicy
	// [policy] alone (see PolicyFor).
	policies    map[string]Policy
	fleetPolicy *Policy
	// Source is the file's bytes as read; commands that edit the file
	// change only the lines they must (see package promote).
	Source []byte
	// positions maps a key path such as "waves[1].canary" to where it is.
	positions positionIndex
	// clusterNames are the cluster names, sorted, as Parse found them (see
	// ClusterNames).
	clusterNames []string
}

// Charts says where the operator charts come from.
type Charts struct {
	// Repository is a Helm repository URL (https://...) or an OCI
	// reference (oci://registry/path). A mirror is one line.
	Repository string `toml:"repository"`
	// Mode is how render writes the operators: "helmrelease" (default) or
	// "manifests" (the charts pre-rendered to plain objects).
	Mode string `toml:"mode"`
	// InRepository says Repository is a folder or archive the fleet file
	// names relative to itself (manifests mode): a part of the fleet
	// repository, which nothing read for the charts may leave. An absolute
	// folder is the operator's machine's, as `gpufleet init` writes it.
	InRepository bool `toml:"-"`
}

// Controller says where gpufleet-controller's image comes from
// ([controller]); each release names the version (Release.Controller).
type Controller struct {
	// Image is either the image repository without a tag, e.g.
	// "registry.example.com/gpufleet/gpufleet-controller" (the release's
	// controller version is its tag, and may carry the build's digest),
	// or one image pinned by digest for every release,
	// "<repository>[:<tag>]@sha256:<64 hex digits>", written as it is. A
	// mirror is one line. validateControllers reads it with imageref, the
	// one parser of image references.
	Image string `toml:"image"`
}

// Pinned reports whether Image names one image by digest, the image every
// cluster runs whatever its release.
func (c Controller) Pinned() bool {
	ref, err := imageref.Parse(c.Image)
	return err == nil && ref.Pinned()
}

// ControllerImage is the image reference of release r's controller:
// "<image>:<controller>" ("…:v0.9.0", or "…:v0.9.0@sha256:…" where the
// release pins its build), or the pinned image itself; empty when r names
// no controller version.
func (f *Fleet) ControllerImage(r *Release) string {
	if r == nil || r.Controller == "" {
		return ""
	}
	if f.Controller.Pinned() {
		return f.Controller.Image
	}
	return f.Controller.Image + ":" + r.Controller
}

// ControllerVersion is the version part of r.Controller ("v0.9.0" of
// "v0.9.0@sha256:…"): what the controller's Deployment is labelled with.
func (r *Release) ControllerVersion() string {
	v, _, _ := strings.Cut(r.Controller, "@")
	return v
}

// Chart modes.
const (
	ModeHelmRelease = "helmrelease"
	ModeManifests   = "manifests"
)

// Release is one version set of the GPU software stack.
type Release struct {
	Name string `toml:"-"`
	// GPUOperator and NetworkOperator are chart versions, e.g. "v25.10.1".
	// NetworkOperator may instead be "none" (NoNetworkOperator), or be left
	// out where no release the clusters run has one: the clusters on such a
	// release run no Network Operator (render writes none, and removes one
	// it wrote). Ask RunsNetworkOperator, never the string.
	GPUOperator     string `toml:"gpu-operator"`
	NetworkOperator string `toml:"network-operator"`
	// Controller is gpufleet-controller's version (its image tag, e.g.
	// "v0.9.0"), optionally pinned to one build by its digest
	// ("v0.9.0@sha256:<64 hex digits>"): render installs the controller at
	// it on every cluster the release reaches. Empty in every release, or
	// set in every release (see validateControllers): a release without it
	// would remove the controller from the clusters it reaches.
	Controller string `toml:"controller"`
	// Driver is the GPU driver version, e.g. "580.95.05", or with
	// Precompiled a driver branch, e.g. "570".
	Driver string `toml:"driver"`
	// Precompiled asks the GPU Operator for its precompiled driver images
	// (NVIDIADriver usePrecompiled): Driver is then a branch, and the
	// operator runs one driver DaemonSet per kernel version, installing the
	// newest build of that branch for each node's kernel. It is a property
	// of the release, not of a pool, so one release means one driver on
	// every cluster and the gate, the DriverRollout and the NVIDIADrivers
	// all name the same thing. See IsDriverBranch.
	Precompiled bool `toml:"precompiled"`
	// OFEDDriver is the Network Operator's OFED (DOCA) driver version, e.g.
	// "25.04-0.6.1.0-2" or "doca3.2.0-25.10-1.2.8.0-2": render writes the
	// cluster's NicClusterPolicy with it where a pool has ManagedNICs.
	// Empty: the release leaves the network side as it is (render writes
	// no NicClusterPolicy). Needs NetworkOperator; its form is the one that
	// version's admission webhook accepts (see OFEDVersionForm).
	OFEDDriver string `toml:"ofed-driver"`
	// ExpectFailure marks a release that is meant to fail (a drill).
	ExpectFailure bool   `toml:"expect-failure"`
	Notes         string `toml:"notes"`
}

// Cluster is one Kubernetes cluster with GPU pools.
type Cluster struct {
	Name string `toml:"-"`
	// Environment groups clusters for policy overrides, e.g. staging, prod.
	Environment string `toml:"environment"`
	// Context is the kubeconfig context gate connects through.
	Context string  `toml:"context"`
	Pools   []*Pool `toml:"pools"`
	// Kubernetes is the cluster's Kubernetes minor version ("1.31"), where
	// the fleet file says it (`gpufleet init` writes it): render leaves out
	// what the cluster's API server does not serve (the controller's
	// admission policy before 1.30). Empty: a current Kubernetes.
	Kubernetes string `toml:"kubernetes"`
	// GPUOperator and NetworkOperator are the operators as they are
	// installed on the cluster ([clusters.<name>.gpu-operator] and
	// [clusters.<name>.network-operator], which `gpufleet init` writes):
	// render adopts those Helm releases instead of installing a second copy
	// beside them. Nil when the table is absent: gpufleet installs the
	// operator itself, under the defaults (see GPUOperatorRelease and its
	// neighbours, which answer for both cases).
	GPUOperator     *OperatorInstall `toml:"gpu-operator"`
	NetworkOperator *OperatorInstall `toml:"network-operator"`
}

// AdmissionPolicyVersion is the first Kubernetes version that serves
// ValidatingAdmissionPolicy as admissionregistration.k8s.io/v1.
var AdmissionPolicyVersion = versions.MustParse("1.30")

// ServesAdmissionPolicy reports whether the cluster's API server serves
// ValidatingAdmissionPolicy v1: Kubernetes 1.30 or later, or a cluster
// whose version the fleet file does not say (taken to be current).
func (c *Cluster) ServesAdmissionPolicy() bool {
	v, err := versions.Parse(c.Kubernetes)
	return err != nil || v.AtLeast(AdmissionPolicyVersion)
}

// Pool is a set of identical GPU nodes in a cluster.
type Pool struct {
	Name string `toml:"name"`
	// Product is the GPU as GPU Feature Discovery reports it in the
	// nvidia.com/gpu.product label, e.g. NVIDIA-H100-80GB-HBM3.
	Product string `toml:"product"`
	Nodes   int    `toml:"nodes"`
	// MIG is the mig-manager profile (nvidia.com/mig.config), e.g.
	// all-1g.10gb; empty when the pool does not use MIG.
	MIG string `toml:"mig"`
	// ManagedNICs says the pool's nodes have NVIDIA (Mellanox) NICs that
	// the Network Operator manages: the NicClusterPolicy's OFED driver and
	// RDMA shared device plugin run on them.
	ManagedNICs bool `toml:"managed-nics"`
	// GPUDirectRDMA says GPU workloads on the pool use GPUDirect RDMA: the
	// GPU driver is built against the Network Operator's OFED driver and
	// loads nvidia_peermem (the GPU Operator's driver.rdma). It needs
	// ManagedNICs.
	GPUDirectRDMA bool `toml:"gpudirect-rdma"`
}

// Wave is an ordered step of a promotion.
type Wave struct {
	Name     string   `toml:"name"`
	Clusters []string `toml:"clusters"`
	// Canary is one of Clusters that receives the release first.
	Canary string `toml:"canary"`
	// PauseAfterCanary holds the rest of the wave until approved.
	PauseAfterCanary bool `toml:"pause-after-canary"`
	// RequireApproval means the wave is entered only after approval.
	RequireApproval bool `toml:"require-approval"`
}

// Promotion is where the rollout of releases stands. It is the part of the
// file that start, promote, approve, pause and abort edit; each field sits on
// its own line so that each command changes as few lines as possible.
type Promotion struct {
	// Stable is the release every cluster runs unless a rollout reached it.
	Stable string `toml:"stable"`
	// Rollout is the release being rolled out, on one line; nil when none.
	Rollout *Rollout `toml:"rollout"`
	// Approved lists approvals by name, e.g. "r2026-08/prod-h100".
	Approved []string `toml:"approved"`
	// Paused stops promotion and approvals, and pauses in-cluster rollouts.
	Paused bool `toml:"paused"`
}

// Rollout says how far a release has got.
type Rollout struct {
	Release string `toml:"release"`
	// Wave is the last wave the release has reached.
	Wave string `toml:"wave"`
	// Stage is "canary" while only the wave's canary cluster has the
	// release, "all" (the default) once the whole wave has it.
	Stage string `toml:"stage"`
	// Aborted sends every cluster back to the stable release; the clusters
	// the rollout had reached roll their upgraded nodes back.
	Aborted bool `toml:"aborted"`
}

// Rollout stages.
const (
	StageCanary = "canary"
	StageAll    = "all"
)

// Policy is the node rollout policy in force for one cluster: the fleet's
// [policy] with its environment's and then its own overrides applied.
type Policy struct {
	// CanaryNodes upgrade first and alone; then the rollout waits for approval.
	CanaryNodes int
	// AutoApproveCanary lets the rollout pass its canary after a clean soak.
	AutoApproveCanary bool
	// ParallelNodes is how many nodes may be in flight at once.
	ParallelNodes int
	// MaxUnavailable bounds the nodes out of service for any reason.
	MaxUnavailable Amount
	Soak           time.Duration
	// FailureBudget is how many nodes may fail before the rollout stops.
	FailureBudget   int
	DrainTimeout    time.Duration
	InstallTimeout  time.Duration
	ValidateTimeout time.Duration
	// Windows are when nodes may start; none means always.
	Windows []Window
	// Freezes are periods when nothing may start, windows or not.
	Freezes []Freeze
	Health  Health
	// Actuator is who moves the nodes (see v1alpha1.Actuator).
	Actuator v1alpha1.Actuator
	// Evict is which pods a node's drain evicts (v1alpha1.EvictMode): the
	// GPU pods, or every pod.
	Evict v1alpha1.EvictMode
	// GPUPodSelector also makes GPU pods of the pods it matches (see
	// v1alpha1.EvictSpec); nil when unset.
	GPUPodSelector *metav1.LabelSelector
	// WaitForPods names the pods a drain leaves to finish, for at most
	// WaitTimeout (v1alpha1.WaitForCompletion); nil when none.
	WaitForPods *metav1.LabelSelector
	WaitTimeout time.Duration
	// MaintenanceDomain is the node label whose values group nodes into
	// domains maintained as one unit (v1alpha1.MaintenanceDomain), e.g.
	// nvidia.com/gpu.clique; DomainSize the most nodes one domain holds.
	// Empty and zero when none.
	MaintenanceDomain string
	DomainSize        int
	// DRADrivers are the DRA drivers whose devices are GPUs
	// (v1alpha1.DRASpec); nil: NVIDIA's. DRAPluginSelector selects their
	// kubelet plugin's pods; nil: the nvidia-dra-driver-gpu chart's.
	DRADrivers        []string
	DRAPluginSelector *metav1.LabelSelector
}

// Amount is a node count or a percentage of the nodes.
type Amount struct {
	Value   int
	Percent bool
}

// String formats the amount as it is written in the fleet file.
func (a Amount) String() string {
	if a.Percent {
		return itoa(a.Value) + "%"
	}
	return itoa(a.Value)
}

// Window is a recurring maintenance window.
type Window struct {
	Days []time.Weekday
	// Start and End are "HH:MM" in TimeZone; End before Start crosses midnight.
	Start, End string
	TimeZone   string
}

// Freeze is a period when no node may start.
type Freeze struct {
	Start, End time.Time
	Reason     string
}

// Health names the signals that fail a node during its soak.
type Health struct {
	NodeConditions  []string
	EventReasons    []string
	PrometheusURL   string
	PrometheusQuery string
}
