package nodesim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Pool is a group of identical GPU nodes.
type Pool struct {
	// Name is the pool's name (label gpufleet.io/pool) and the prefix of its
	// nodes' names: pool "h100" has nodes h100-0, h100-1, ...
	Name string
	// Product is GFD's product label, e.g. NVIDIA-H100-80GB-HBM3.
	Product string
	// Nodes is how many nodes the pool has.
	Nodes int
	// Driver is the driver version installed when a node is created; with
	// Provisioned it may be empty: no driver installed yet.
	Driver string
	// Provisioned: the nodes register as a provisioner (an autoscaler, a
	// node template) creates them, or as a fleet that never ran gpufleet
	// has them: NFD's labels and the GPU product, but no gpufleet label
	// (no gpufleet.io/driver, no gpufleet.io/pool); GFD's driver labels
	// only when Driver is set. Until something labels such a node, no
	// NVIDIADriver of gpufleet's selects it.
	Provisioned bool
	// GPUCount is GPUs per node; 8 when zero.
	GPUCount int
	// MemoryMiB is memory per GPU; known products fill it in.
	MemoryMiB int
	// Family is the GPU architecture (hopper, ampere, ...); known products
	// fill it in.
	Family string
	// MIGConfig is the nvidia.com/mig.config label; "all-disabled" when empty.
	MIGConfig string
	// ManagedNICs: the nodes have NVIDIA (Mellanox) NICs, so Node Feature
	// Discovery labels them pci-15b3.present=true, which the Network
	// Operator's OFED DaemonSet selects.
	ManagedNICs bool
	// DRA: the nodes run NVIDIA's DRA driver for GPUs: they carry
	// LabelDRANode, which its kubelet plugin's DaemonSet selects, and the
	// simulator plays that plugin (dra.go).
	DRA bool
}

// withDefaults fills what p leaves empty.
func (p Pool) withDefaults() Pool {
	spec, known := knownGPUs[p.Product]
	if p.GPUCount == 0 {
		p.GPUCount = 8
	}
	if p.MemoryMiB == 0 && known {
		p.MemoryMiB = spec.memoryMiB
	}
	if p.Family == "" {
		p.Family = "unknown"
		if known {
			p.Family = spec.family
		}
	}
	if p.MIGConfig == "" {
		p.MIGConfig = "all-disabled"
	}
	return p
}

func (p Pool) migCapable() bool { return knownGPUs[p.Product].migable }

// Validate reports every problem with p.
func (p Pool) Validate() error {
	var errs []error
	if p.Name == "" {
		errs = append(errs, errors.New("pool: name is empty"))
	}
	if p.Product == "" {
		errs = append(errs, fmt.Errorf("pool %q: product is empty", p.Name))
	}
	if p.Nodes < 1 {
		errs = append(errs, fmt.Errorf("pool %q: nodes must be at least 1, got %d", p.Name, p.Nodes))
	}
	if p.Driver != "" || !p.Provisioned {
		if err := ValidateVersion(p.Driver); err != nil {
			errs = append(errs, fmt.Errorf("pool %q: %w", p.Name, err))
		}
	}
	if p.GPUCount < 0 || p.MemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("pool %q: gpus and memory must not be negative", p.Name))
	}
	return errors.Join(errs...)
}

// NodeNames returns the names of p's nodes.
func (p Pool) NodeNames() []string {
	names := make([]string, p.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", p.Name, i)
	}
	return names
}

// ParsePool parses the command line's pool form,
// "name=h100,product=NVIDIA-H100-80GB-HBM3,nodes=4,driver=570.172.08",
// with optional gpus=, memory= (MiB), family=, mig=, managed-nics= and
// dra= (true or false).
func ParsePool(s string) (Pool, error) {
	var p Pool
	var errs []error
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			errs = append(errs, fmt.Errorf("pool %q: %q is not key=value", s, kv))
			continue
		}
		var err error
		switch k {
		case "name":
			p.Name = v
		case "product":
			p.Product = v
		case "nodes":
			p.Nodes, err = strconv.Atoi(v)
		case "driver":
			p.Driver = v
		case "gpus":
			p.GPUCount, err = strconv.Atoi(v)
		case "memory":
			p.MemoryMiB, err = strconv.Atoi(v)
		case "family":
			p.Family = v
		case "mig":
			p.MIGConfig = v
		case "managed-nics":
			p.ManagedNICs, err = strconv.ParseBool(v)
		case "dra":
			p.DRA, err = strconv.ParseBool(v)
		default:
			err = fmt.Errorf("unknown key %q (want name, product, nodes, driver, gpus, memory, family, mig, managed-nics, dra)", k)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pool %q: %s: %w", s, k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Pool{}, err
	}
	return p, p.Validate()
}
