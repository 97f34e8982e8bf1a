package adopt

import (
	"fmt"
	"strings"
)

// Reason names a kind of problem or warning. Callers (the report, tests)
// switch on it; the message says the rest in words.
type Reason string

// Problems: init refuses to write a fleet file while any is found.
const (
	// ReasonClusterName: a context's name is not a valid cluster name.
	ReasonClusterName Reason = "InvalidClusterName"
	// ReasonNoGPUNodes: a cluster has no GPU node at all.
	ReasonNoGPUNodes Reason = "NoGPUNodes"
	// ReasonUnplaced: a GPU node without a GPU product label (its driver
	// is not loaded, so GPU Feature Discovery has not labelled it).
	ReasonUnplaced Reason = "NodeWithoutProduct"
	// ReasonNoDriverVersion: a GPU node with a product but no driver
	// version label.
	ReasonNoDriverVersion Reason = "NodeWithoutDriverVersion"
	// ReasonPreinstalledDriver: nodes whose host has its own driver.
	ReasonPreinstalledDriver Reason = "PreinstalledDriver"
	// ReasonDriverOff: nodes the operator was told not to give a driver.
	ReasonDriverOff Reason = "DriverDeployOff"
	// ReasonUpgrading: nodes in the middle of an operator driver upgrade
	// (or failed in one).
	ReasonUpgrading Reason = "UpgradeInProgress"
	// ReasonMIGChanging: nodes whose MIG layout is being applied, or
	// failed to apply.
	ReasonMIGChanging Reason = "MIGLayoutNotApplied"
	// ReasonMIGLayout: a MIG layout the fleet file cannot name.
	ReasonMIGLayout Reason = "UnsupportedMIGLayout"
	// ReasonMixedDrivers: a pool whose nodes run different drivers.
	ReasonMixedDrivers Reason = "MixedDrivers"
	// ReasonMixedAllocation: a pool whose nodes hand their GPUs out in
	// different ways (the device plugin on some, DRA on others, or both
	// on one node), which no setting says how to roll yet.
	ReasonMixedAllocation Reason = "MixedDevicePluginAndDRA"
	// ReasonDRADisagrees: nodes whose GPU DRA ResourceSlices disagree
	// with their driver label, or among themselves, on the driver.
	ReasonDRADisagrees Reason = "DRASlicesDisagree"
	// ReasonPoolLabel: gpufleet.io/pool labels that do not make pools
	// (invalid, a pool of mixed GPUs, or a GPU group half labelled).
	ReasonPoolLabel Reason = "PoolLabel"
	// ReasonNoGPUOperator: no GPU Operator Deployment in the cluster.
	ReasonNoGPUOperator Reason = "NoGPUOperator"
	// ReasonSeveralOperators: more than one Deployment of one operator.
	ReasonSeveralOperators Reason = "SeveralOperators"
	// ReasonOperatorUnreadable: an operator whose version or Helm release
	// cannot be told.
	ReasonOperatorUnreadable Reason = "OperatorUnreadable"
	// ReasonClusterPolicy: no ClusterPolicy the operator serves, several,
	// or one whose driver is off.
	ReasonClusterPolicy Reason = "ClusterPolicy"
	// ReasonDriverPending: the ClusterPolicy asks for another driver than
	// the nodes run (an upgrade started and not finished).
	ReasonDriverPending Reason = "DriverNotRolledOut"
	// ReasonVersionSkew: clusters (or pools) that run different GPU
	// Operator, Network Operator or driver versions: one fleet file has
	// one stable release.
	ReasonVersionSkew Reason = "VersionSkew"
	// ReasonForeignNVIDIADrivers: NVIDIADrivers gpufleet did not write, on
	// a cluster in NVIDIADriver mode. Render writes its own; the Helm
	// upgrade or Flux would remove these (the chart's default one when
	// render turns it off), and the operator deletes their DaemonSets with
	// every driver pod at once.
	ReasonForeignNVIDIADrivers Reason = "ForeignNVIDIADrivers"
	// ReasonReleaseValues: the values of an operator's Helm release could
	// not be read (init may not list Secrets there, no record of the
	// release, a record that does not decode), or were given by hand for
	// an operator the cluster does not run. Without them render would
	// install the release with gpufleet's values alone.
	ReasonReleaseValues Reason = "ReleaseValuesUnreadable"
)

// Warnings: init writes the fleet file and says these beside it.
const (
	// ReasonPoolLabelsNeeded: pools that share a GPU product, whose nodes
	// need gpufleet.io/pool before render's NVIDIADrivers can tell them apart.
	ReasonPoolLabelsNeeded Reason = "PoolLabelsNeeded"
	// ReasonOwnedValueReplaced: a release's own value of a key gpufleet
	// sets (the MIG strategy, the Network Operator's NFD) that render sets
	// otherwise, changing what runs beyond gpufleet's own settings.
	ReasonOwnedValueReplaced Reason = "OwnedValueReplaced"
	// ReasonProductLabelNeeded: nodes placed by their DRA slices'
	// productName, without the nvidia.com/gpu.product label that selects
	// a pool's nodes. A warning in ClusterPolicy mode; a problem in
	// NVIDIADriver mode, where render's NVIDIADrivers would leave them
	// without a driver.
	ReasonProductLabelNeeded Reason = "ProductLabelNeeded"
)

// Reasons are every Reason, problems then warnings: the enum of the -o
// json report's reason (docs/schema/cli.schema.json, checked by a test).
var Reasons = []Reason{
	ReasonClusterName, ReasonNoGPUNodes, ReasonUnplaced, ReasonNoDriverVersion, ReasonPreinstalledDriver,
	ReasonDriverOff, ReasonUpgrading, ReasonMIGChanging, ReasonMIGLayout, ReasonMixedDrivers, ReasonMixedAllocation, ReasonDRADisagrees, ReasonPoolLabel,
	ReasonNoGPUOperator, ReasonSeveralOperators, ReasonOperatorUnreadable, ReasonClusterPolicy,
	ReasonDriverPending, ReasonVersionSkew, ReasonForeignNVIDIADrivers, ReasonReleaseValues,
	ReasonPoolLabelsNeeded, ReasonOwnedValueReplaced, ReasonProductLabelNeeded,
}

// Problem is one thing init refuses to guess (or, as a warning, one thing
// a person should know), with the nodes it is about and what to do.
type Problem struct {
	// Cluster is the cluster (context) it is about; empty for the fleet
	// as a whole (clusters that disagree).
	Cluster string `json:"cluster,omitempty"`
	Reason  Reason `json:"reason"`
	// Nodes are the nodes it is about, sorted.
	Nodes []string `json:"nodes,omitempty"`
	// Message says what was found and what to do.
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Cluster == "" {
		return p.Message
	}
	return p.Cluster + ": " + p.Message
}

// Problems are every problem found, in a fixed order (clusters by name,
// then the fleet's). As an error it reads one problem a line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// nodeList names nodes in a message: all of them up to a handful, then
// how many more (the problem's Nodes list has every one).
func nodeList(nodes []string) string {
	const shown = 5
	if len(nodes) <= shown {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:shown], ", "), len(nodes)-shown)
}

// nodeWord is "node" or "nodes".
func nodeWord(n int) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}
