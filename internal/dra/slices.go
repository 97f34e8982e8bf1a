package dra

import (
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// DriverGPU is the DRA driver name under which NVIDIA's DRA driver for
// GPUs (the nvidia-dra-driver-gpu chart) publishes a node's GPUs and MIG
// devices, and the name of its device class. It is the default GPU DRA
// driver wherever gpufleet reads slices.
const DriverGPU = "gpu.nvidia.com"

// The device attributes of DriverGPU's slices that gpufleet reads. A
// device may also name them qualified by the driver's own domain
// (gpu.nvidia.com/productName), which the API takes for the same.
const (
	// AttributeDriverVersion is the driver version, a version attribute:
	// semver, so driver 580.95.05 is written 580.95.5.
	AttributeDriverVersion = "driverVersion"
	// AttributeProductName is the GPU's name as NVML says it, with spaces
	// ("NVIDIA H100 80GB HBM3"); a MIG device carries its GPU's.
	AttributeProductName = "productName"
)

// Node is what one DRA driver's ResourceSlices say of one node.
type Node struct {
	Name string
	// Slices are the names of the slices read for it, sorted.
	Slices []string
	// Devices counts the devices they publish.
	Devices int
	// Products are the devices' productName values, distinct, sorted.
	Products []string
	// DriverVersions are the devices' driverVersion values, distinct as
	// driver versions (580.95.5 and 580.95.05 are one), sorted.
	DriverVersions []string
}

// Nodes reads the ResourceSlices of driver, by node name. Slices of other
// drivers and slices not of one node (network-attached devices, a node
// selector) are left out.
//
// Only the newest generation of each pool counts: a DRA driver that
// republishes its devices (after a driver swap, with the new version)
// raises its pool's generation, and slices of an older one are about to
// be deleted; the scheduler ignores them too. Read otherwise, they would
// say a node runs two drivers.
func Nodes(list []resourcev1.ResourceSlice, driver string) map[string]*Node {
	newest := map[string]int64{} // pool → generation
	for _, s := range list {
		if s.Spec.Driver == driver {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	out := map[string]*Node{}
	for _, s := range list {
		if s.Spec.Driver != driver || s.Spec.NodeName == nil || *s.Spec.NodeName == "" ||
			s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		n := out[*s.Spec.NodeName]
		if n == nil {
			n = &Node{Name: *s.Spec.NodeName}
			out[n.Name] = n
		}
		n.Slices = append(n.Slices, s.Name)
		for _, d := range s.Spec.Devices {
			n.Devices++
			if a, ok := attribute(d, driver, AttributeProductName); ok && a.StringValue != nil && *a.StringValue != "" && !slices.Contains(n.Products, *a.StringValue) {
				n.Products = append(n.Products, *a.StringValue)
			}
			if a, ok := attribute(d, driver, AttributeDriverVersion); ok && a.VersionValue != nil && *a.VersionValue != "" &&
				!slices.ContainsFunc(n.DriverVersions, func(v string) bool { return versions.SameDriver(v, *a.VersionValue) }) {
				n.DriverVersions = append(n.DriverVersions, *a.VersionValue)
			}
		}
	}
	for _, n := range out {
		slices.Sort(n.Slices)
		slices.Sort(n.Products)
		slices.Sort(n.DriverVersions)
	}
	return out
}

// attribute is the device's attribute name, unqualified or qualified by
// the driver's domain.
func attribute(d resourcev1.Device, driver, name string) (resourcev1.DeviceAttribute, bool) {
	if a, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok {
		return a, true
	}
	a, ok := d.Attributes[resourcev1.QualifiedName(driver+"/"+name)]
	return a, ok
}

// Product is the node's GPU product as GPU Feature Discovery labels it
// (nvidia.com/gpu.product, spaces made '-': NVIDIA-H100-80GB-HBM3); ok is
// false unless the slices name exactly one.
func (n *Node) Product() (string, bool) {
	if len(n.Products) != 1 {
		return "", false
	}
	return GFDProduct(n.Products[0]), true
}

// DriverVersion is the one driver version the slices publish, in NVIDIA's
// form (580.95.05, as GPU Feature Discovery's label and the fleet file
// write it); ok is false when they publish none, several, or one that is
// no NVIDIA driver version (then Version has what they say).
func (n *Node) DriverVersion() (string, bool) {
	if len(n.DriverVersions) != 1 {
		return "", false
	}
	return versions.NVIDIADriver(n.DriverVersions[0])
}

// Version says what the slices publish as driver version, for a message:
// "580.95.5", "580.95.5 and 570.172.8", or "none".
func (n *Node) Version() string {
	if len(n.DriverVersions) == 0 {
		return "none"
	}
	return strings.Join(n.DriverVersions, " and ")
}

// GFDProduct is productName as GPU Feature Discovery writes it in its
// product label: every space a '-'.
func GFDProduct(productName string) string {
	return strings.ReplaceAll(strings.TrimSpace(productName), " ", "-")
}

// Driver is the driver a node runs, as its two reports say it: GPU
// Feature Discovery's label (v1alpha1.LabelGFDDriverFull) and the GPU DRA
// driver's slices. Both read the kernel module, so they must agree: a DRA
// kubelet plugin left running across a driver swap keeps serving the old
// driver's devices (k8s-driver-manager PR #203), and a node whose reports
// disagree runs a driver nobody can vouch for.
type Driver struct {
	// Version is the driver in NVIDIA's form (580.95.05): the label's, or
	// the slices' where the node has no label; "" when neither says.
	Version string
	// FromSlices says Version was read from the slices alone.
	FromSlices bool
	// Conflict says how the reports disagree (the slices with the label,
	// or among themselves, or with what a driver version is); "" when
	// they agree.
	Conflict string
}

// DriverOf reads the driver a node runs from its label's value (label,
// "" when it has none) and its slices (nil when none). `gpufleet init`
// and the gate read a node's driver by this one rule.
func DriverOf(label string, n *Node) Driver {
	d := Driver{Version: label}
	if n == nil || len(n.DriverVersions) == 0 {
		return d
	}
	slices := strings.Join(n.Slices, ", ")
	if len(n.DriverVersions) > 1 {
		d.Conflict = fmt.Sprintf("its ResourceSlices of %s (%s) publish more than one driver: %s", DriverGPU, slices, n.Version())
		return d
	}
	published := n.DriverVersions[0]
	if label != "" {
		if !versions.SameDriver(label, published) {
			d.Conflict = fmt.Sprintf("%s says %s, its ResourceSlices of %s (%s) say %s", v1alpha1.LabelGFDDriverFull, label, DriverGPU, slices, published)
		}
		return d
	}
	v, ok := n.DriverVersion()
	if !ok {
		d.Conflict = fmt.Sprintf("its ResourceSlices of %s (%s) publish driver %s, which is no NVIDIA driver version (major.minor.patch)", DriverGPU, slices, published)
		return d
	}
	d.Version, d.FromSlices = v, true
	return d
}
