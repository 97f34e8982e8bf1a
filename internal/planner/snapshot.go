package planner

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Snapshot is everything the planner may look at.
type Snapshot struct {
	// Rollout is the DriverRollout: its name, spec and last written status.
	// The status matters for two things only: the canary nodes once chosen
	// (so the choice never moves) and the conditions' transition times.
	Rollout *v1alpha1.DriverRollout
	// Nodes are the cluster's nodes, in any order; the planner applies the
	// rollout's node selector itself.
	Nodes []Node
	// Others are the cluster's other DriverRollouts. A node that belongs
	// to one of them (Node.Owner) is left alone whatever this list holds;
	// the list decides only who goes first on a node that belongs to no
	// rollout and that several select: the oldest (then the first by
	// name) that is not being deleted.
	Others []Peer
	// OFEDPolicy is the OFED version the cluster's NicClusterPolicy names
	// (spec.ofedDriver.version), for a rollout with spec.ofed; empty when
	// unknown. While it is not the rollout's OFED target no node starts: a
	// node released to the Network Operator would get the policy's
	// version, or none, and fail for a lag of Git's (the NicClusterPolicy
	// and the DriverRollout are applied one after the other).
	OFEDPolicy string
}

// Peer is another DriverRollout of the cluster, as far as the planner
// needs to know it.
type Peer struct {
	Name string
	// Created is its creation time: the older of two rollouts selecting
	// the same free node takes it.
	Created time.Time
	// Deleting: it is being deleted. It takes no new node, and its own
	// are released (see Release), so a newer rollout may take them.
	Deleting bool
	// NodeSelector is its spec.nodeSelector.
	NodeSelector metav1.LabelSelector
}

// precedes reports whether rollout a goes before rollout b on a node both
// select: the older first, the first by name when created together.
func precedes(aName string, aCreated time.Time, bName string, bCreated time.Time) bool {
	if !aCreated.Equal(bCreated) {
		return aCreated.Before(bCreated)
	}
	return aName < bName
}

// Node is one node as the controller observed it, with the rollout progress
// recorded on it (labels and annotations), so a restarted controller rebuilds
// exactly this.
type Node struct {
	Name   string
	Labels map[string]string
	// Unschedulable is spec.unschedulable: cordoned, by anyone.
	Unschedulable bool
	// AdminCordoned records that someone other than gpufleet holds the
	// node's cordon (v1alpha1.AnnotationAdminCordoned): recorded the first
	// time any rollout acted on the node while it was cordoned and the
	// cordon was not that rollout's own. Such a node is never uncordoned by
	// a rollout: someone had a reason we do not know. It is a fact about
	// the node, whichever rollout it belongs to.
	AdminCordoned bool
	// Ready is the node's Ready condition.
	Ready bool

	// Owner is the DriverRollout the node belongs to
	// (v1alpha1.LabelRollout), empty when it belongs to none. (A node
	// naming a rollout that is confirmed gone is released before it is
	// planned on.) A node that belongs to another rollout is left alone
	// and counts as unavailable.
	Owner string

	// Phase, Since and Failed are the node's progress in the snapshot's
	// rollout: empty on a node that belongs to another one (the observer
	// leaves them out, and the planner ignores them there).
	//
	// Phase is the node's rollout phase; empty means Pending.
	Phase v1alpha1.NodePhase
	// Since is when the node entered Phase.
	Since time.Time
	// Failed records that the node left the happy path because of a
	// failure (not an abort); it counts against the failure budget.
	Failed bool

	// Drained: every evictable pod has left the node.
	Drained bool
	// DriverReady: the driver pod on the node is Ready.
	DriverReady bool
	// DriverFailed: the driver pod cannot install (crash loop, init error).
	DriverFailed bool
	// DriverVersion is the version the node reports through GPU Feature
	// Discovery (nvidia.com/cuda.driver-version.full). It is compared with
	// the rollout's versions only through DriverMatches, which also knows
	// a precompiled driver's branch.
	DriverVersion string
	// Signals are health signals from the spec's sources (node conditions,
	// Events, the Prometheus query) seen on the node; only those at or
	// after Since count during a soak.
	Signals []Signal

	// GPUPods is how many pods on the node hold a GPU (HoldsGPU), and
	// GPUWork the GPU work they have in flight, in GPU-seconds: each pod's
	// GPUs times how long it has run. A drain destroys at most that (all
	// of it for a job that never checkpoints), so the planner starts the
	// pending nodes that hold the least first: no GPU pod, then the least
	// work. Zero on a node whose pods were not observed: then the order is
	// the nodes' own.
	GPUPods int
	GPUWork float64

	// The node's OFED driver, observed only for a rollout with spec.ofed
	// (ofed.go). OFEDVersion is the image tag of the OFED container of
	// the node's OFED pod ("" without one); it is compared with the
	// spec's versions only through OFEDMatches. OFEDReady: that pod is
	// Ready. OFEDFailed: it cannot come up (crash loop, image error) or
	// the Network Operator marked the node upgrade-failed.
	OFEDVersion string
	OFEDReady   bool
	OFEDFailed  bool
	// The node's dynamic resource allocation, observed by the controller
	// (its DRA reading) for the steps of a DRA node's driver swap
	// (dra.go). DRA: NVIDIA's DRA kubelet plugin runs on the node (a pod
	// spec.dra's plugin selector matches), or the node publishes
	// ResourceSlices of a GPU DRA driver. DRAClaims are the ResourceClaims
	// with a device of a GPU DRA driver (spec.dra.drivers) allocated on the
	// node and still reserved for a consumer, as "namespace/name", sorted.
	// DRAPluginRunning: a plugin pod is on the node (terminating or not);
	// DRAPluginReady: one is Ready. DRASliceVersions are the driver
	// versions (v1alpha1.DRAAttributeDriverVersion) the devices of the
	// node's ResourceSlices of GPU DRA drivers publish, each once, sorted.
	DRA              bool
	DRAClaims        []string
	DRAPluginRunning bool
	DRAPluginReady   bool
	DRASliceVersions []string
	// ComputeDomain is the ComputeDomain the node belongs to, for a
	// rollout whose maintenanceDomain names v1alpha1.LabelComputeDomain:
	// the one recorded when its maintenance began
	// (v1alpha1.AnnotationComputeDomain), else the one of the channel
	// claims allocated on it, else its label's. Empty: none.
	ComputeDomain string

	// DriverStale: the node's GPU driver pod started before its OFED pod
	// last became Ready, so with GPUDirect RDMA its nvidia_peermem was
	// loaded against an OFED that has since been replaced (gpu-operator
	// #2868): only a new driver pod loads it again.
	DriverStale bool
}

// Signal is one health signal seen on a node.
type Signal struct {
	At time.Time
	// Source is where it was seen: "condition", "event" or "prometheus".
	Source string
	// Reason is the condition type, Event reason or metric, e.g. XidError.
	Reason string
	// Message is the detail, e.g. "Xid 79: GPU has fallen off the bus".
	Message string
}

// Transition is one node moving from one phase to another, with what the
// actuator must do for it. The Reason sentence feeds events, logs, status
// and transcripts alike.
type Transition struct {
	Node     string
	From, To v1alpha1.NodePhase
	Reason   string

	// Failure: the node failed; record it (Node.Failed) so it counts
	// against the budget.
	Failure bool
	// Cordon the node (it was schedulable). The cordon is then the
	// rollout's own, so a stale admin-cordon mark goes with this write:
	// whoever had cordoned the node before has lifted it since.
	Cordon bool
	// RecordAdminCordon: the node is cordoned and the cordon is not the
	// rollout's own (it is not in flight or quarantined in this rollout);
	// record that someone else holds it, in the same write as the move, so
	// that no rollout ever uncordons it. Set on whatever move first meets
	// such a node: settled Done, started, rolled back, quarantined.
	RecordAdminCordon bool
	// Uncordon the node: it is back in service and the cordon was the
	// rollout's own.
	Uncordon bool
	// Driver, when set, is the version the node's driver label must select
	// (the target to install, the previous one to roll back).
	Driver string
	// Quarantine the node: the spec's quarantine label and taint.
	Quarantine bool
	// Join: the node had no driver label and Driver is the one it is
	// given, or no pool label and Pool is the one it is given (see
	// join.go); the phase does not change.
	Join bool
	// Pool, when set, is the pool label (v1alpha1.LabelPool) the node is
	// given.
	Pool string

	// The gpu-operator actuator's (see operator.go). Hold sets the GPU
	// Operator's skip label on the node (v1alpha1.LabelOperatorUpgradeSkip
	// = "true"), so the operator leaves it at upgrade-required; Release
	// removes it, handing the node to the operator's upgrade controller.
	Hold, Release bool
	// HoldOFED sets the Network Operator's OFED skip label
	// (v1alpha1.LabelOFEDUpgradeSkip = "true"), so its upgrade controller
	// leaves the node's OFED pod alone; ReleaseOFED removes it, inside
	// the node's maintenance, so that it replaces the pod (ofed.go).
	HoldOFED, ReleaseOFED bool
	// RestartDriver deletes the node's GPU driver pod once the node's
	// OFED is through, where the driver label does not change: its
	// DaemonSet makes a new one, which loads nvidia_peermem against the
	// new OFED (Node.DriverStale).
	RestartDriver bool
	// Plugin is what happens to the node's DRA kubelet plugin
	// (v1alpha1.LabelDRAPlugin; see dra.go).
	Plugin PluginMove
	// ComputeDomain, when set, records the node's ComputeDomain
	// (v1alpha1.AnnotationComputeDomain) as its maintenance starts.
	ComputeDomain string
	// KeepCordon writes the operator's record that the node was cordoned
	// when its upgrade began
	// (v1alpha1.AnnotationOperatorInitialUnschedulable), so the operator
	// ends it upgrade-done without uncordoning it. Set on a release of a
	// cordoned node: the operator itself records it only when it first
	// marks the node upgrade-required, and a cordon put on later would be
	// lifted.
	KeepCordon bool
}

// Result is what one planning pass decided.
type Result struct {
	// Transitions in a stable order: progress of nodes in flight first
	// (in name order), then new starts (in start order).
	Transitions []Transition
	// Status is the rollout status after the transitions.
	Status v1alpha1.DriverRolloutStatus
	// NextCheck is the earliest time the plan can change with no new
	// observation (a timeout, a soak's end, a window opening, a freeze
	// ending); zero when only an observation can change it. The controller
	// requeues for it; the simulator jumps to it.
	NextCheck time.Time
}
