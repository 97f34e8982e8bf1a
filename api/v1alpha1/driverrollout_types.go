package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DriverRollout rolls one GPU driver version across the GPU nodes of a
// cluster, one safe step at a time: canary nodes first, then, once approved,
// the other nodes in parallel within maintenance windows, backing a node out
// by itself when it goes bad. It is cluster-scoped because it acts on Nodes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dro,categories=gpufleet
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Done",type=string,JSONPath=`.status.progress`,description="Nodes done / nodes selected"
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.budgetUsed`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DriverRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DriverRolloutSpec `json:"spec"`
	// Status is what the controller observed. It reads as {} before the
	// controller first writes it (the API server applies this default on
	// every read): Flux's CEL health checks fail on an object with no status
	// field at all until their timeout, which would hold a new rollout's
	// lifecycle step.
	// +kubebuilder:default={}
	Status DriverRolloutStatus `json:"status,omitempty"`
}

// DriverRolloutList is a list of DriverRollouts.
//
// +kubebuilder:object:root=true
type DriverRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DriverRollout `json:"items"`
}

// DriverRolloutSpec says what to roll out, where, and how carefully.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.abort) || !oldSelf.abort || (has(self.abort) && self.abort)",message="abort cannot be undone: create a new rollout"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenanceDomain) || self.maintenanceDomain.maxNodes <= (has(self.parallelNodes) ? self.parallelNodes : 1)",message="maintenanceDomain.maxNodes exceeds parallelNodes: a domain is started as one unit, every node of it in flight at once"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenanceDomain) || !has(self.maxUnavailable) || type(self.maxUnavailable) != int || self.maintenanceDomain.maxNodes <= self.maxUnavailable",message="maintenanceDomain.maxNodes exceeds maxUnavailable: a domain is taken out of service as one unit"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenanceDomain) || !has(self.actuator) || self.actuator != 'gpu-operator'",message="maintenanceDomain needs the gpufleet actuator: the GPU Operator's upgrade controller moves and returns nodes one by one"
// +kubebuilder:validation:XValidation:rule="!has(self.ofed) || !has(self.actuator) || self.actuator != 'gpu-operator'",message="ofed needs the gpufleet actuator: the GPU Operator's and the Network Operator's upgrade controllers each cordon, drain and uncordon a node on their own, so one maintenance for both drivers cannot be had through them"
type DriverRolloutSpec struct {
	// TargetVersion is the driver version to install, e.g. "580.95.05",
	// or the branch of a precompiled driver, e.g. "570": a node runs a
	// branch once GPU Feature Discovery reports a version of it
	// (nvidia.com/cuda.driver-version.major).
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+){0,3}$`
	// +kubebuilder:validation:MaxLength=32
	TargetVersion string `json:"targetVersion"`

	// PreviousVersion is the driver version (or precompiled branch) a
	// failed node is rolled back to.
	// It may equal TargetVersion: render writes a rollout for every cluster,
	// and one already on its release's driver has nothing to move.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+){0,3}$`
	// +kubebuilder:validation:MaxLength=32
	PreviousVersion string `json:"previousVersion"`

	// NodeSelector picks the nodes of the rollout, e.g. one GPU pool. It
	// must select something: an empty selector picks every node of the
	// cluster and overlaps every other rollout. It cannot change: a node
	// belongs to the rollout that took it until that rollout is deleted,
	// so a rollout whose selector moved away would hold nodes it no
	// longer looks at. Create a new rollout instead. (Two rollouts whose
	// selectors overlap cannot be refused here, as a rule sees only its
	// own object: the controller gives each node to one of them and the
	// other reports the Overlap condition.)
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="nodeSelector must select something: an empty selector picks every node of the cluster"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeSelector is immutable: the nodes a rollout took stay its own; create a new rollout instead"
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`

	// Canary says which nodes go first and alone.
	// +optional
	Canary CanarySpec `json:"canary,omitzero"`

	// Approval lets the rollout past its canary. It must equal the rollout's
	// metadata.name: typing the name is the approval, so approving the
	// wrong rollout by copy and paste does nothing.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Approval string `json:"approval,omitempty"`

	// ParallelNodes is the most nodes in flight at once. A node that
	// finishes frees its slot at once; there are no lockstep batches.
	// Unset, it is DefaultParallelNodes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	ParallelNodes int32 `json:"parallelNodes,omitempty"`

	// MaxUnavailable bounds the selected nodes out of service for any
	// reason (cordoned by anyone, NotReady, quarantined, out for other
	// reasons, or in flight): a count or a percentage such as "10%".
	// A percentage rounds down but never below one node (see
	// MaxUnavailableOf); unset, it is DefaultMaxUnavailable.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxUnavailable must be a count >= 1 or a percentage from 1% to 100%"
	// +kubebuilder:default=1
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Windows are the maintenance windows in which a node may start. None
	// means always. A node already in flight finishes outside its window.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// Freezes are periods when no node may start, windows or not.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Freezes []FreezePeriod `json:"freezes,omitempty"`

	// Paused starts no new node; nodes in flight finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Abort starts no new node and rolls back every node that has left
	// Pending and not already failed, Done ones included. It is final: the
	// schema refuses to unset it, so a rollout never resumes half rolled
	// back; create a new rollout instead.
	// +optional
	Abort bool `json:"abort,omitempty"`

	// FailureBudget is how many nodes may fail; one more stops the rollout
	// (Stalled, BudgetExhausted). Zero stops it at the first failure.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailureBudget int32 `json:"failureBudget"`

	// Soak is how long a validated node runs on the new driver with no
	// health signal before it is Done. It cannot be 0s: a node is watched
	// for some time on every driver (DefaultSoak when unset).
	// +kubebuilder:default="30m"
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="must be a duration from 0s to 168h, 0s excluded"
	Soak metav1.Duration `json:"soak,omitzero"`

	// Timeouts bound each step of a node.
	// +optional
	Timeouts StepTimeouts `json:"timeouts,omitzero"`

	// Evict says which of a node's pods its drain evicts. The node is
	// cordoned either way, so nothing new lands on it while its driver is
	// swapped.
	// +optional
	Evict EvictSpec `json:"evict,omitzero"`

	// MaintenanceDomain groups the selected nodes that share a value of a
	// node label (an NVLink/IMEX domain: nvidia.com/gpu.clique) into one
	// unit of maintenance: cordoned and drained together, upgraded and
	// validated together, back in service together, counted together
	// against parallelNodes and maxUnavailable; the canary is whole
	// domains, and a failed node rolls its whole domain back. A job spans
	// every node of such a domain, so upgrading it node by node would
	// interrupt that job once per node. A node without the label is a
	// domain of its own.
	// +optional
	MaintenanceDomain *MaintenanceDomain `json:"maintenanceDomain,omitempty"`

	// Health names the signals that fail a node during its soak.
	// +optional
	Health HealthSources `json:"health,omitzero"`

	// Quarantine is put on a node whose rollback failed too, to keep it out
	// of service until someone looks at it.
	// +optional
	Quarantine QuarantineSpec `json:"quarantine,omitzero"`

	// Actuator says who moves the nodes: gpufleet itself (cordon, drain,
	// flip the driver label, roll a failed node back), or the GPU
	// Operator's own upgrade controller, gated node by node by gpufleet
	// through the operator's skip label (see ActuatorGPUOperator for what
	// that path cannot do). Unset, it is DefaultActuator.
	// +kubebuilder:default=gpufleet
	// +optional
	Actuator Actuator `json:"actuator,omitempty"`

	// OutOfService selects nodes that count as out for other reasons, e.g.
	// a remediation label; they count against maxUnavailable and are not
	// started while they match.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	OutOfService []metav1.LabelSelector `json:"outOfService,omitempty"`

	// Pools are the GPU pools whose nodes the NVIDIADrivers tell apart by
	// their pool label (LabelPool): pools of the cluster that share a GPU
	// product. Each says which of the rollout's nodes are its own. A node
	// without a pool label that exactly one pool's selector matches is
	// given that pool's name when it joins (see the joining rule); one that
	// none or several match is left for its node template or a person to
	// label. Render writes it; it is empty where every pool has a product
	// of its own.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Pools []PoolSpec `json:"pools,omitempty"`

	// OFED, when set, moves the Network Operator's OFED driver in the same
	// maintenance as the GPU driver: each node is cordoned and drained
	// once, its OFED pod is replaced first (the controller releases the
	// node's OFED hold, LabelOFEDUpgradeSkip, and the Network Operator's
	// upgrade controller restarts the pod), then its GPU driver is
	// installed, or its driver pod restarted where only OFED changed, as
	// a GPU driver loaded before an OFED reload keeps a stale
	// nvidia_peermem. Every selected node is held at every other time.
	// Unset, the rollout leaves OFED and its hold alone.
	// +optional
	OFED *OFEDSpec `json:"ofed,omitempty"`

	// DRA says which dynamic resource allocation drivers hand out GPUs and
	// where their kubelet plugin runs (see DRASpec). Unset, NVIDIA's.
	// +optional
	DRA DRASpec `json:"dra,omitzero"`
}

// OFEDSpec is the OFED driver a rollout moves its nodes to.
type OFEDSpec struct {
	// TargetVersion is the OFED (DOCA) driver version the cluster's
	// NicClusterPolicy names, e.g. "doca3.2.0-25.10-1.2.8.0-2"; a node
	// runs it when its OFED container's image tag is the version or
	// begins with it and a dash (the OS and architecture follow).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9._]*$`
	TargetVersion string `json:"targetVersion"`
	// PreviousVersion is the OFED version before this release. A node's
	// OFED goes back to it only when the NicClusterPolicy names it again
	// (the release reverted in Git): the OFED DaemonSet has one version
	// for the whole cluster, so a node whose new OFED failed cannot be
	// rolled back on its own and is quarantined once its rollback times
	// out.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9._]*$`
	PreviousVersion string `json:"previousVersion"`
	// NodeSelectors pick, among the rollout's nodes, those the OFED driver
	// runs on, as the NicClusterPolicy's node affinity does (a node any of
	// them matches); none, every node. A node none matches (a pool whose
	// NICs the Network Operator does not manage) has no OFED: it is
	// neither held nor waited for.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	// Peermem: GPU workloads of the rollout's nodes use GPUDirect RDMA,
	// so a GPU driver pod started before its node's OFED last became
	// Ready is restarted in the node's maintenance (its nvidia_peermem
	// was loaded against the OFED replaced since). A driver pod is
	// validated with its PeermemContainer wherever it has one, as its
	// Ready condition covers every container.
	// +optional
	Peermem bool `json:"peermem,omitempty"`
}

// Moves reports whether the rollout moves its nodes' OFED driver: spec.ofed
// is set and its target is not its previous version. A rollout whose two
// are one (at rest, a release of the GPU driver alone, or the first release
// to name an OFED driver, whose previous version is unknown) holds its OFED
// nodes and releases none: a node keeps the OFED it runs, whatever that
// is, and render leaves the Network Operator's upgrade machine off.
func (o *OFEDSpec) Moves() bool { return o != nil && o.TargetVersion != o.PreviousVersion }

// PoolSpec is one GPU pool of the rollout's cluster.
type PoolSpec struct {
	// Name is the pool's name: the value of its nodes' LabelPool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// NodeSelector picks the pool's nodes among the rollout's, e.g. by
	// GPU product and MIG layout.
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`
}

// CanarySpec picks the canary nodes, by count or by name.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.count) && self.count > 0 && has(self.nodes) && size(self.nodes) > 0)",message="canary count and canary nodes are mutually exclusive"
type CanarySpec struct {
	// Count is how many of the selected nodes (in name order) go first.
	// Zero means no canary, and then no approval is needed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Count *int32 `json:"count,omitempty"`

	// Nodes names the canary nodes.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Nodes []string `json:"nodes,omitempty"`

	// AutoApproveAfterSoak lets the rollout past the canary without
	// approval once every canary node soaked clean.
	// +optional
	AutoApproveAfterSoak bool `json:"autoApproveAfterSoak,omitempty"`
}

// Weekday is a day of a maintenance window.
//
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// Weekdays.
const (
	Monday    Weekday = "Mon"
	Tuesday   Weekday = "Tue"
	Wednesday Weekday = "Wed"
	Thursday  Weekday = "Thu"
	Friday    Weekday = "Fri"
	Saturday  Weekday = "Sat"
	Sunday    Weekday = "Sun"
)

// MaintenanceWindow is a recurring period in which nodes may start.
//
// +kubebuilder:validation:XValidation:rule="self.start != self.end",message="a window's start must differ from its end"
type MaintenanceWindow struct {
	// Days the window opens on; none means every day. A window that
	// crosses midnight belongs to the day it opens on.
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +optional
	Days []Weekday `json:"days,omitempty"`

	// Start is "HH:MM" in TimeZone.
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	// +kubebuilder:validation:MaxLength=5
	Start string `json:"start"`

	// End is "HH:MM" in TimeZone; an End before Start crosses midnight.
	// (MaxLength keeps the CEL rule on the window within the API server's
	// cost budget: without it the rule is estimated over unbounded strings.)
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	// +kubebuilder:validation:MaxLength=5
	End string `json:"end"`

	// TimeZone is an IANA name such as "Europe/Paris"; empty means UTC.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// FreezePeriod is a period when no node may start.
//
// +kubebuilder:validation:XValidation:rule="self.end > self.start",message="a freeze must end after it starts"
type FreezePeriod struct {
	// Start is when the freeze begins.
	// +kubebuilder:validation:Format=date-time
	Start metav1.Time `json:"start"`
	// End is when it ends.
	// +kubebuilder:validation:Format=date-time
	End metav1.Time `json:"end"`
	// Reason says why, for messages.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// StepTimeouts bound each step of a node; a step that overruns fails the
// node. Each defaults to its Default*Timeout constant and cannot be 0s.
type StepTimeouts struct {
	// Drain is how long evicting the node's pods may take.
	// +kubebuilder:default="30m"
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="must be a duration from 0s to 168h, 0s excluded"
	Drain metav1.Duration `json:"drain,omitzero"`
	// Install is how long the driver pod may take to become Ready, for the
	// new driver and for a rollback.
	// +kubebuilder:default="20m"
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="must be a duration from 0s to 168h, 0s excluded"
	Install metav1.Duration `json:"install,omitzero"`
	// Validate is how long the node may take to report the new version.
	// +kubebuilder:default="10m"
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="must be a duration from 0s to 168h, 0s excluded"
	Validate metav1.Duration `json:"validate,omitzero"`
}

// MaintenanceDomain names the node label whose values are the domains.
type MaintenanceDomain struct {
	// NodeLabel is the label key, e.g. nvidia.com/gpu.clique (GPU Feature
	// Discovery's label of a node's NVLink domain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	NodeLabel string `json:"nodeLabel"`
	// MaxNodes is the most nodes one domain holds (18 on a GB200 NVL72
	// rack of 4-GPU trays). The schema refuses a value above parallelNodes
	// or a count of maxUnavailable, so a domain can always start; a domain
	// found larger than it, or than a percentage of maxUnavailable
	// resolves to, does not start, and the status says so.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxNodes int32 `json:"maxNodes"`
}

// EvictMode is which pods a drain evicts.
//
// +kubebuilder:validation:Enum=GPUPods;All
type EvictMode string

// Evict modes.
const (
	// EvictGPUPods evicts only the pods that hold a GPU (see
	// EvictSpec.GPUPodSelector): the driver cannot be unloaded while a
	// process holds a GPU, and nothing else stands in the swap's way, so
	// a node's CPU-only pods (monitoring, log shippers, services without a
	// GPU) keep running on the cordoned node. The GPU Operator's own
	// upgrade controller deletes GPU pods the same way (gpuPodDeletion) and
	// leaves its full drain off by default.
	EvictGPUPods EvictMode = "GPUPods"
	// EvictAll evicts every pod but DaemonSet and mirror pods, as kubectl
	// drain does.
	EvictAll EvictMode = "All"
)

// EvictSpec says which pods a node's drain evicts. PodDisruptionBudgets
// are honoured in either mode (the Eviction API), and DaemonSet and mirror
// pods always stay.
type EvictSpec struct {
	// Mode is GPUPods or All. Unset, it is DefaultEvictMode.
	// +kubebuilder:default=GPUPods
	// +optional
	Mode EvictMode `json:"mode,omitempty"`

	// GPUPodSelector makes GPU pods of the pods it matches, besides those
	// that request a GPU (ResourceGPU, a MIG device: ResourceMIGPrefix) or
	// hold a claim with a device of a GPU DRA driver (spec.dra.drivers): pods that use a
	// GPU without saying so to the scheduler (a hostPath to /dev/nvidia*, a
	// privileged container). It has no use with Mode All.
	// +optional
	GPUPodSelector *metav1.LabelSelector `json:"gpuPodSelector,omitempty"`

	// WaitForCompletion leaves the pods it selects to finish: a starting
	// node is cordoned (nothing new lands on it, and it counts against
	// maxUnavailable) and its drain evicts nothing while a pod the drain
	// would evict matches, for at most the timeout; then the drain evicts
	// as without it, within timeouts.drain. Unset, nothing is waited for.
	// +optional
	WaitForCompletion *WaitForCompletion `json:"waitForCompletion,omitempty"`
}

// WaitForCompletion names the pods a drain waits for, e.g. batch jobs that
// checkpoint or end by themselves, and for how long.
//
// Note: at the timeout the pods are evicted, not waited for longer with the
// node given back. A node given back is uncordoned, takes new work, and
// would have to wait again from the start the next time it is picked: a
// busy node would never be upgraded, and a rollout with it never end. The
// timeout is the most a job's wait may cost the rollout; set it above the
// jobs' run time (or their checkpoint interval). The GPU Operator's
// waitForCompletion does the same.
type WaitForCompletion struct {
	// PodSelector picks the pods to wait for; it must select something.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="podSelector must select something: an empty one would wait for every pod"
	PodSelector metav1.LabelSelector `json:"podSelector"`
	// Timeout is how long a node waits for them.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('168h')",message="must be a duration from 0s to 168h, 0s excluded"
	Timeout metav1.Duration `json:"timeout"`
}

// The extended resources by which a pod asks the scheduler for a GPU: the
// device plugin's whole GPUs (and, where GPU sharing renames them,
// ResourceGPU followed by a suffix such as ".shared") and MIG devices
// ("nvidia.com/mig-1g.10gb").
const (
	ResourceGPU       = "nvidia.com/gpu"
	ResourceMIGPrefix = "nvidia.com/mig-"
)

// HealthSources name the signals that fail a node during its soak.
type HealthSources struct {
	// NodeConditions are node condition types that fail a node when True,
	// e.g. GpuXidError set by a node problem detector.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	NodeConditions []string `json:"nodeConditions,omitempty"`

	// EventReasons are reasons of Events on the node that fail it, e.g.
	// XidError, EccDoubleBitError.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	EventReasons []string `json:"eventReasons,omitempty"`

	// Prometheus is an optional query over DCGM exporter metrics.
	// +optional
	Prometheus *PrometheusCheck `json:"prometheus,omitempty"`
}

// PrometheusCheck fails a node when its query returns a non-zero value for
// the node over the soak.
type PrometheusCheck struct {
	// URL is the Prometheus server.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// Query is a PromQL expression; "$node" stands for the node name.
	// DCGM_FI_DEV_XID_ERRORS is a last-value gauge, so compare over the soak
	// (e.g. changes(...[$soak])), not once.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`
}

// QuarantineSpec is what marks a quarantined node.
type QuarantineSpec struct {
	// Labels are set on a quarantined node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taint is put on a quarantined node; the default keeps every pod off.
	// +optional
	Taint *corev1.Taint `json:"taint,omitempty"`
}
