package nodesim

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// AnnotationDriverUnloaded, the simulator's own annotation, on a node says
// that a driver pod began installing another version since GFD's labels
// last changed: the version they report is no longer loaded. Every node
// label the simulator reads and writes as GPU Feature Discovery, the GPU
// Operator and gpufleet would is api/v1alpha1's.
const AnnotationDriverUnloaded = "nodesim.gpufleet.io/driver-unloaded"

// versionRE matches driver versions such as 580.95.05 or 550.54.
var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// ValidateVersion reports whether v looks like an NVIDIA driver version.
func ValidateVersion(v string) error {
	if !versionRE.MatchString(v) {
		return fmt.Errorf("driver version %q is not of the form 580.95.05", v)
	}
	return nil
}

// driverVersionLabels returns the labels GPU Feature Discovery sets for
// driver version v: 580.95.05 gives major 580, minor 95, revision 05 and
// full 580.95.05 (the revision keeps its leading zero, as GFD's does).
func driverVersionLabels(v string) map[string]string {
	parts := strings.SplitN(v, ".", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return map[string]string{
		v1alpha1.LabelGFDDriverMajor:    parts[0],
		v1alpha1.LabelGFDDriverMinor:    parts[1],
		v1alpha1.LabelGFDDriverRevision: parts[2],
		v1alpha1.LabelGFDDriverFull:     v,
	}
}

// gpuSpec is what GFD reports for one GPU product.
type gpuSpec struct {
	family    string
	memoryMiB int
	migable   bool
}

// knownGPUs are the products whose family and memory need not be given.
var knownGPUs = map[string]gpuSpec{
	"NVIDIA-H100-80GB-HBM3":  {"hopper", 81559, true},
	"NVIDIA-H200":            {"hopper", 143771, true},
	"NVIDIA-A100-SXM4-80GB":  {"ampere", 81920, true},
	"NVIDIA-A100-SXM4-40GB":  {"ampere", 40960, true},
	"NVIDIA-L40S":            {"ada-lovelace", 46068, false},
	"NVIDIA-B200":            {"blackwell", 183359, true},
	"NVIDIA-A10":             {"ampere", 23028, false},
	"Tesla-T4":               {"turing", 15360, false},
	"NVIDIA-GH200-480GB":     {"hopper", 97871, true},
	"NVIDIA-H100-NVL":        {"hopper", 95830, true},
	"NVIDIA-RTX-PRO-6000-SE": {"blackwell", 97887, true},
}

// nodeLabels returns every label a node of pool p registers with when
// driver version v is installed on it ("": none is): NFD's and GFD's,
// gpufleet's, and kwok's, which hands the node to kwok; NFD's Mellanox PCI
// label with ManagedNICs. A provisioned
// pool's nodes carry no gpufleet label. There is no
// nvidia.com/gpu.present: the GPU Operator sets it (and its
// nvidia.com/gpu.deploy.* labels) from NFD's PCI label.
func nodeLabels(p Pool, node, v string) map[string]string {
	l := map[string]string{
		"kubernetes.io/hostname":     node,
		"kubernetes.io/os":           "linux",
		"kubernetes.io/arch":         "amd64",
		kwokLabel:                    "fake",
		v1alpha1.LabelNFDNvidiaPCI:   "true",
		v1alpha1.LabelNFDOSID:        simOSID,
		v1alpha1.LabelNFDOSVersion:   simOSVersion,
		v1alpha1.LabelNFDKernel:      simKernel,
		v1alpha1.LabelPool:           p.Name,
		v1alpha1.LabelDriver:         v,
		v1alpha1.LabelGFDProduct:     p.Product,
		v1alpha1.LabelGFDCount:       strconv.Itoa(p.GPUCount),
		v1alpha1.LabelGFDMemory:      strconv.Itoa(p.MemoryMiB),
		v1alpha1.LabelGFDFamily:      p.Family,
		v1alpha1.LabelGFDMIGCapable:  strconv.FormatBool(p.migCapable()),
		v1alpha1.LabelMIGConfig:      p.MIGConfig,
		v1alpha1.LabelMIGConfigState: "success",
	}
	if p.ManagedNICs {
		l[v1alpha1.LabelNFDMellanoxPCI] = "true"
	}
	if p.DRA {
		l[LabelDRANode] = "true"
	}
	if p.Provisioned {
		delete(l, v1alpha1.LabelPool)
		delete(l, v1alpha1.LabelDriver)
	}
	if v == "" {
		delete(l, v1alpha1.LabelDriver)
		return l
	}
	maps.Copy(l, driverVersionLabels(v))
	return l
}
