package dra

import (
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// AttributeProductName is the device attribute in which DRA driver
// gpu.nvidia.com's slices publish the GPU's name as NVML says it, with
// spaces ("NVIDIA H100 80GB HBM3"); a MIG device carries its GPU's. The
// driver version is v1alpha1.DRAAttributeDriverVersion. A device may name
// either qualified by the driver's own domain (gpu.nvidia.com/productName),
// which the API takes for the same.
const AttributeProductName = "productName"

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
			if v := DeviceDriverVersion(&d, driver); v != "" &&
				!slices.ContainsFunc(n.DriverVersions, func(have string) bool { return versions.SameDriver(have, v) }) {
				n.DriverVersions = append(n.DriverVersions, v)
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

// DeviceDriverVersion is the driver version device d of driver publishes
// (v1alpha1.DRAAttributeDriverVersion, semver form); empty when none.
func DeviceDriverVersion(d *resourcev1.Device, driver string) string {
	if a, ok := attribute(*d, driver, v1alpha1.DRAAttributeDriverVersion); ok && a.VersionValue != nil {
		return *a.VersionValue
	}
	return ""
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
		d.Conflict = fmt.Sprintf("its ResourceSlices of %s (%s) publish more than one driver: %s", v1alpha1.DRADriverGPU, slices, n.Version())
		return d
	}
	published := n.DriverVersions[0]
	if label != "" {
		if !versions.SameDriver(label, published) {
			d.Conflict = fmt.Sprintf("%s says %s, its ResourceSlices of %s (%s) say %s", v1alpha1.LabelGFDDriverFull, label, v1alpha1.DRADriverGPU, slices, published)
		}
		return d
	}
	v, ok := n.DriverVersion()
	if !ok {
		d.Conflict = fmt.Sprintf("its ResourceSlices of %s (%s) publish driver %s, which is no NVIDIA driver version (major.minor.patch)", v1alpha1.DRADriverGPU, slices, published)
		return d
	}
	d.Version, d.FromSlices = v, true
	return d
}
