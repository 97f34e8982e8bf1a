package v1alpha1

import "strings"

// The NVIDIA Network Operator's OFED (DOCA) driver, as the lifecycle
// controller finds it on a node and holds it there. The Network Operator
// runs k8s-operator-libs' upgrade state machine with driver name "ofed":
// its labels are that library's formats with "ofed" in them. render turns
// the machine on (NicClusterPolicy spec.ofedDriver.upgradePolicy.autoUpgrade)
// with its own drain off, and the controller holds every node of a rollout
// that names an OFED driver with LabelOFEDUpgradeSkip, releasing a node
// only inside its maintenance, after its drain: so a node's OFED reloads
// once, inside the one cordon and drain its GPU driver swap takes.
const (
	// LabelOFEDUpgradeSkip, "true", keeps the Network Operator's upgrade
	// controller from taking a node past upgrade-required. It is read in
	// that state only: a node released once is not stopped by putting it
	// back.
	LabelOFEDUpgradeSkip = "nvidia.com/ofed-driver-upgrade.skip"
	// LabelOFEDUpgradeState is the node's OFED upgrade state
	// (upgrade-required … upgrade-done, or upgrade-failed): the same
	// library's states as the GPU Operator's, the OperatorState* values.
	LabelOFEDUpgradeState = "nvidia.com/ofed-driver-upgrade-state"
	// AnnotationOFEDInitialUnschedulable is the Network Operator's record
	// that the node was cordoned when its OFED upgrade began: it then ends
	// the upgrade without uncordoning the node.
	AnnotationOFEDInitialUnschedulable = "nvidia.com/ofed-driver-upgrade.node-initial-state.unschedulable"
	// LabelMOFEDWait is "true" on a node while its OFED container is not
	// Ready, "false" once it is: the RDMA device plugins select "false".
	LabelMOFEDWait = "network.nvidia.com/operator.mofed.wait"
	// LabelOFEDDriverPod marks the OFED driver pods (the label exists,
	// with an empty value).
	LabelOFEDDriverPod = "nvidia.com/ofed-driver"
	// OFEDContainer is the OFED driver pod's driver container; its image
	// tag is the OFED version followed by the OS and architecture, e.g.
	// "doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64".
	OFEDContainer = "mofed-container"
	// PeermemContainer is the GPU driver pod's sidecar that loads
	// nvidia_peermem (GPUDirect RDMA) once the GPU driver and OFED are
	// both loaded; the GPU Operator adds it with driver.rdma.enabled.
	PeermemContainer = "nvidia-peermem-ctr"
)

// OFEDMatches reports whether an OFED container's image tag is of OFED
// version want (OFEDSpec.TargetVersion, PreviousVersion): the tag is the
// version, or the version followed by a dash and the OS and architecture
// the Network Operator appends ("doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64").
// The OS part begins with a letter: a version's own parts after a dash are
// numbers (its revision, "-2"), so "…-1.2.8.0" does not match the tag of
// "…-1.2.8.0-2".
func OFEDMatches(tag, want string) bool {
	if tag == "" || want == "" {
		return false
	}
	if tag == want {
		return true
	}
	rest, ok := strings.CutPrefix(tag, want+"-")
	return ok && rest != "" && isLetter(rest[0])
}

// OFEDTagVersion is the OFED version an OFED container's image tag names,
// by OFEDMatches' reading: the tag up to the dash before its OS part (the
// first part after a dash that begins with a letter), so that
// OFEDMatches(tag, OFEDTagVersion(tag)) holds; "" for a tag without an OS
// part ("latest", or a tag the Network Operator did not write).
func OFEDTagVersion(tag string) string {
	for i := 1; i+1 < len(tag); i++ {
		if tag[i] == '-' && isLetter(tag[i+1]) {
			return tag[:i]
		}
	}
	return ""
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
