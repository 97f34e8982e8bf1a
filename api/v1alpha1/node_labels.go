package v1alpha1

// The labels and annotations the lifecycle controller keeps on a Node: a
// rollout's memory, read back by a restarted controller, by every other
// rollout, by `gpufleet gate` and by the admission policy in
// config/admission. They are one contract, kept here.
const (
	// LabelRollout names the DriverRollout the node belongs to. A node
	// belongs to at most one rollout at a time: a rollout takes a node
	// that belongs to none with its first write to it, made with the
	// node's resourceVersion as a precondition, so two rollouts (or two
	// controllers) that both saw it free cannot both take it; the second
	// write is refused with a conflict. The label stays while the node is
	// Done or rolled back, because an abort of that rollout still moves
	// the node; it is removed when the rollout is deleted (the
	// controller's finalizer releases the node). Every other rollout
	// leaves the node alone and counts it as unavailable.
	LabelRollout = "gpufleet.io/rollout"
	// LabelPhase is the node's phase in that rollout (a NodePhase).
	LabelPhase = "gpufleet.io/rollout-phase"
	// AnnotationSince is when the node entered its phase (RFC 3339, the
	// controller's clock).
	AnnotationSince = "gpufleet.io/rollout-since"
	// AnnotationFailed marks a node that failed in its rollout; it counts
	// against that rollout's failure budget.
	AnnotationFailed = "gpufleet.io/rollout-failed"
	// AnnotationAdminCordoned records that someone other than gpufleet
	// holds the node's cordon. It is written the first time any rollout
	// acts on the node while it is cordoned and the cordon is not that
	// rollout's own, whatever the move (settled Done, started, rolled
	// back, quarantined), in the same write as the move. It is a fact
	// about the node, not about a rollout: another rollout taking the
	// node keeps it, and releasing the node keeps it while the node stays
	// cordoned. It goes only when a rollout cordons the node itself (the
	// node was schedulable, so nobody else held a cordon any more). No
	// rollout uncordons a node that carries it.
	AnnotationAdminCordoned = "gpufleet.io/admin-cordoned"
)

// The labels the rest of gpufleet puts on, or reads from, a GPU node.
const (
	// LabelDriver is the driver version (or precompiled branch) a node
	// should run. Render writes one NVIDIADriver per version selecting on
	// it, and the controller flips it to move a node to another driver's
	// DaemonSet.
	LabelDriver = "gpufleet.io/driver"
	// LabelPool names the fleet file's GPU pool a node belongs to.
	LabelPool = "gpufleet.io/pool"
	// LabelQuarantined is the label a quarantined node carries when the
	// rollout's spec.quarantine names none: its rollback failed too, and
	// someone must look at it.
	LabelQuarantined = "gpufleet.io/quarantined"
	// TaintQuarantined is the key of the taint a quarantined node carries
	// when spec.quarantine names none; the taint keeps every pod off.
	TaintQuarantined = "gpufleet.io/quarantined"
)

// ControllerNodeLabel is a gpufleet.io/ node label that gpufleet-controller
// writes, and what anyone else may do with it: by default nothing, neither
// add it, change it nor remove it, nor create a node that carries it. The
// admission policy of config/admission is generated from
// ControllerNodeLabels (internal/admission), so that the labels the
// controller's state lives in are written by the controller alone: not by
// a hand edit, a node template or a second tool with node patch rights.
//
// +kubebuilder:object:generate=false
type ControllerNodeLabel struct {
	// Key is the label.
	Key string
	// OthersMayRemove lets anyone remove the label: the quarantine label,
	// which whoever looked at the quarantined node lifts.
	OthersMayRemove bool
	// OthersMayRecordDriver lets anyone set the label to the driver the
	// node reports running (LabelGFDDriverFull, or LabelGFDDriverMajor for
	// a precompiled branch), as it reported it before the request (on a
	// node's creation, as it registers): a label that says what runs moves
	// nothing.
	// It is how a person mends a node whose driver label is wrong, and
	// labels nodes before an actuator switch back to gpufleet (gate and
	// explain say so), and how a node simulator registers a node that
	// runs its driver.
	OthersMayRecordDriver bool
}

// ControllerNodeLabels are the gpufleet.io/ node labels only
// gpufleet-controller writes (see ControllerNodeLabel). Every gpufleet.io/
// node label is here or in PeopleNodeLabels; a test holds the two lists
// to the constants of this package.
var ControllerNodeLabels = []ControllerNodeLabel{
	{Key: LabelRollout},
	{Key: LabelPhase},
	{Key: LabelDriver, OthersMayRecordDriver: true},
	{Key: LabelQuarantined, OthersMayRemove: true},
	{Key: LabelDRAPlugin},
}

// PeopleNodeLabels are the gpufleet.io/ node labels that people, or
// whatever creates the nodes, set: the controller writes LabelPool only
// where a node has none and its pool is plain (pools that share a product
// and a MIG layout need it from a node template or an admin, and `gpufleet
// init` prints the kubectl commands that set it). The admission policy
// leaves them alone.
var PeopleNodeLabels = []string{LabelPool}

// The labels GPU Feature Discovery puts on a node and gpufleet reads: the
// GPU it carries and the driver it runs. A precompiled driver is judged by its branch
// (LabelGFDDriverMajor), a driver built for the node by the full version.
// The node simulator writes them all, as GFD would.
const (
	// LabelGFDProduct is the node's GPU product, e.g.
	// "NVIDIA-H100-80GB-HBM3": a pool's nodes are the nodes carrying its
	// product (and, where pools share one, LabelPool). It exists only once
	// the driver is loaded, and GFD suffixes it under the MIG single
	// strategy ("-MIG-…") and under time-slicing ("-SHARED").
	LabelGFDProduct = "nvidia.com/gpu.product"
	// LabelGFDDriverFull is the whole driver version, e.g. "580.95.05".
	LabelGFDDriverFull = "nvidia.com/cuda.driver-version.full"
	// LabelGFDDriverMajor is its branch, e.g. "580".
	LabelGFDDriverMajor = "nvidia.com/cuda.driver-version.major"
	// LabelGFDDriverMinor is its minor part, e.g. "95".
	LabelGFDDriverMinor = "nvidia.com/cuda.driver-version.minor"
	// LabelGFDDriverRevision is its revision, e.g. "05".
	LabelGFDDriverRevision = "nvidia.com/cuda.driver-version.revision"
	// LabelGFDCount is how many GPUs the node has, e.g. "8".
	LabelGFDCount = "nvidia.com/gpu.count"
	// LabelGFDMemory is one GPU's memory in MiB, e.g. "81559".
	LabelGFDMemory = "nvidia.com/gpu.memory"
	// LabelGFDFamily is the GPU's architecture, e.g. "hopper".
	LabelGFDFamily = "nvidia.com/gpu.family"
	// LabelGFDMIGCapable says whether the GPU can be partitioned with MIG
	// ("true" or "false").
	LabelGFDMIGCapable = "nvidia.com/mig.capable"
	// LabelGFDClique is the node's NVLink/IMEX domain (clique) on systems
	// whose GPUs share one across nodes, e.g. a GB200 NVL72 rack: the
	// label a DriverRollout's maintenanceDomain usually names.
	LabelGFDClique = "nvidia.com/gpu.clique"
)

// The labels Node Feature Discovery puts on a node that the operators'
// DaemonSets select on: render writes the Network Operator's selection
// with LabelNFDMellanoxPCI, and the node simulator writes them all, as
// NFD would.
const (
	// LabelNFDNvidiaPCI says the node has an NVIDIA PCI device; the GPU
	// Operator labels such nodes nvidia.com/gpu.present=true itself.
	LabelNFDNvidiaPCI = "feature.node.kubernetes.io/pci-10de.present"
	// LabelNFDMellanoxPCI says the node has a Mellanox (NVIDIA
	// networking, PCI vendor 15b3) device: the Network Operator's OFED
	// DaemonSet selects it, so the NicClusterPolicy render writes asks
	// for it too.
	LabelNFDMellanoxPCI = "feature.node.kubernetes.io/pci-15b3.present"
	// LabelNFDOSID and LabelNFDOSVersion give the OS release: both
	// operators run one driver DaemonSet per OS version.
	LabelNFDOSID      = "feature.node.kubernetes.io/system-os_release.ID"
	LabelNFDOSVersion = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
	// LabelNFDKernel is the full kernel version (one precompiled GPU
	// driver or OFED DaemonSet per kernel).
	LabelNFDKernel = "feature.node.kubernetes.io/kernel-version.full"
)

// The labels the GPU Operator and its mig-manager put on a node and
// gpufleet reads (the operator's upgrade labels are in actuator.go).
const (
	// LabelGPUPresent marks a node with an NVIDIA GPU, driver or not: the
	// operator sets it from Node Feature Discovery's PCI label before any
	// driver is loaded, so it is what render's DriverRollouts select GPU
	// nodes by (LabelGFDProduct appears only with the driver).
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelDeployDriver is the operator's switch for its driver on the
	// node: "pre-installed" when the host has its own driver, "false" when
	// an admin turned the operator's driver off there.
	LabelDeployDriver = "nvidia.com/gpu.deploy.driver"
	// LabelMIGConfig is mig-manager's layout of the node's GPUs
	// (all-disabled, all-1g.10gb, all-balanced…); absent means no MIG.
	LabelMIGConfig = "nvidia.com/mig.config"
	// LabelMIGConfigState is mig-manager's progress applying it: success,
	// pending, rebooting or failed.
	LabelMIGConfigState = "nvidia.com/mig.config.state"
)
