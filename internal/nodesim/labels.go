package nodesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Labels the simulator reads and writes.
const (
	// LabelDriver is the driver version gpufleet wants on the node; the
	// simulator installs whatever it names.
	LabelDriver = v1alpha1.LabelDriver
	// LabelPool is the node's GPU pool.
	LabelPool = v1alpha1.LabelPool

	// GPU Feature Discovery's labels.
	LabelGPUProduct     = "nvidia.com/gpu.product"
	LabelGPUCount       = "nvidia.com/gpu.count"
	LabelGPUMemory      = "nvidia.com/gpu.memory"
	LabelGPUFamily      = "nvidia.com/gpu.family"
	LabelGPUPresent     = "nvidia.com/gpu.present"
	LabelMIGCapable     = "nvidia.com/mig.capable"
	LabelMIGConfig      = "nvidia.com/mig.config"
	LabelMIGConfigState = "nvidia.com/mig.config.state"
	LabelDriverMajor    = v1alpha1.LabelGFDDriverMajor
	LabelDriverMinor    = v1alpha1.LabelGFDDriverMinor
	LabelDriverRevision = v1alpha1.LabelGFDDriverRevision
	LabelDriverFull     = v1alpha1.LabelGFDDriverFull

	// LabelDriverPodApp is the app label of the GPU Operator's driver pods.
	LabelDriverPodApp = "app"
	// DriverPodApp is its value.
	DriverPodApp = "nvidia-driver-daemonset"
	// LabelDriverPodVersion says which driver version a simulated driver pod
	// installs. Real driver pods carry no such label; code that must also
	// work on real clusters reads LabelDriverFull on the node instead.
	LabelDriverPodVersion = "nodesim.gpufleet.io/driver-version"
	// AnnotationInstallStarted records, on a driver pod, when its install
	// began (RFC 3339, from the simulator's clock).
	AnnotationInstallStarted = "nodesim.gpufleet.io/install-started"
)

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
		LabelDriverMajor:    parts[0],
		LabelDriverMinor:    parts[1],
		LabelDriverRevision: parts[2],
		LabelDriverFull:     v,
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

// nodeLabels returns every label a node of pool p carries when driver
// version v is installed on it ("": none is). A provisioned pool's nodes
// carry no gpufleet label.
func nodeLabels(p Pool, node, v string) map[string]string {
	l := map[string]string{
		"kubernetes.io/hostname": node,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		LabelPool:                p.Name,
		LabelDriver:              v,
		LabelGPUPresent:          "true",
		LabelGPUProduct:          p.Product,
		LabelGPUCount:            strconv.Itoa(p.GPUCount),
		LabelGPUMemory:           strconv.Itoa(p.MemoryMiB),
		LabelGPUFamily:           p.Family,
		LabelMIGCapable:          strconv.FormatBool(p.migCapable()),
		LabelMIGConfig:           p.MIGConfig,
		LabelMIGConfigState:      "success",
	}
	if p.Provisioned {
		delete(l, LabelPool)
		delete(l, LabelDriver)
	}
	if v == "" {
		delete(l, LabelDriver)
		return l
	}
	for k, val := range driverVersionLabels(v) {
		l[k] = val
	}
	return l
}
