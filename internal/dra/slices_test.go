package dra

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// slice is a ResourceSlice of driver for node's pool at generation, with
// devices (each its attributes).
func slice(name, driver, node string, generation int64, devices ...map[resourcev1.QualifiedName]resourcev1.DeviceAttribute) resourcev1.ResourceSlice {
	s := resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: new(node),
		Pool: resourcev1.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: 1},
	}}
	for i, attrs := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-" + string(rune('0'+i)), Attributes: attrs})
	}
	return s
}

func gpu(product, version string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"type":                             {StringValue: new("gpu")},
		AttributeProductName:               {StringValue: new(product)},
		v1alpha1.DRAAttributeDriverVersion: {VersionValue: new(version)},
	}
}

func TestNodes(t *testing.T) {
	qualified := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		v1alpha1.DRADriverGPU + "/" + AttributeProductName:               {StringValue: new("NVIDIA H100 80GB HBM3")},
		v1alpha1.DRADriverGPU + "/" + v1alpha1.DRAAttributeDriverVersion: {VersionValue: new("580.95.5")},
	}
	network := slice("nic", v1alpha1.DRADriverGPU, "", 1, gpu("NVIDIA H100 80GB HBM3", "1.0.0"))
	network.Spec.NodeName, network.Spec.AllNodes = nil, new(true)
	selected := slice("selected", v1alpha1.DRADriverGPU, "", 1, gpu("NVIDIA H100 80GB HBM3", "1.0.0"))
	selected.Spec.NodeName, selected.Spec.NodeSelector = nil, &corev1.NodeSelector{}
	list := []resourcev1.ResourceSlice{
		slice("a-1", v1alpha1.DRADriverGPU, "a", 1, gpu("NVIDIA H100 80GB HBM3", "580.95.5"), qualified),
		// A slice the driver republished after a swap, and the old one not
		// deleted yet: only the newer generation counts.
		slice("b-old", v1alpha1.DRADriverGPU, "b", 3, gpu("NVIDIA H100 80GB HBM3", "570.172.8")),
		slice("b-new", v1alpha1.DRADriverGPU, "b", 4, gpu("NVIDIA H100 80GB HBM3", "580.95.5")),
		// Two slices of one node that disagree.
		slice("c-1", v1alpha1.DRADriverGPU, "c", 1, gpu("NVIDIA A100-SXM4-80GB", "580.95.5")),
		slice("c-2", v1alpha1.DRADriverGPU, "c", 1, gpu("NVIDIA A100-SXM4-80GB", "570.172.8"), gpu("NVIDIA A100-SXM4-80GB", "580.95.05")),
		// Another driver's slice of a node, and slices not of one node.
		slice("d-nic", "dra.net", "d", 1, gpu("NIC", "1.0.0")),
		network, selected,
		// A slice with no attributes the gate reads.
		slice("e-1", v1alpha1.DRADriverGPU, "e", 1, map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}),
	}
	got := Nodes(list, v1alpha1.DRADriverGPU)
	want := map[string]*Node{
		"a": {Name: "a", Slices: []string{"a-1"}, Devices: 2, Products: []string{"NVIDIA H100 80GB HBM3"}, DriverVersions: []string{"580.95.5"}},
		"b": {Name: "b", Slices: []string{"b-new"}, Devices: 1, Products: []string{"NVIDIA H100 80GB HBM3"}, DriverVersions: []string{"580.95.5"}},
		"c": {Name: "c", Slices: []string{"c-1", "c-2"}, Devices: 3, Products: []string{"NVIDIA A100-SXM4-80GB"}, DriverVersions: []string{"570.172.8", "580.95.5"}},
		"e": {Name: "e", Slices: []string{"e-1"}, Devices: 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Nodes (-want +got):\n%s", d)
	}

	for _, tt := range []struct {
		node            string
		product         string
		productOK       bool
		driver, version string
		driverOK        bool
	}{
		{"a", "NVIDIA-H100-80GB-HBM3", true, "580.95.05", "580.95.5", true},
		{"c", "NVIDIA-A100-SXM4-80GB", true, "", "570.172.8 and 580.95.5", false},
		{"e", "", false, "", "none", false},
	} {
		n := got[tt.node]
		p, ok := n.Product()
		if p != tt.product || ok != tt.productOK {
			t.Errorf("%s: Product() = %q, %t; want %q, %t", tt.node, p, ok, tt.product, tt.productOK)
		}
		d, ok := n.DriverVersion()
		if d != tt.driver || ok != tt.driverOK {
			t.Errorf("%s: DriverVersion() = %q, %t; want %q, %t", tt.node, d, ok, tt.driver, tt.driverOK)
		}
		if v := n.Version(); v != tt.version {
			t.Errorf("%s: Version() = %q, want %q", tt.node, v, tt.version)
		}
	}
}

func TestDriverOf(t *testing.T) {
	node := func(versions ...string) *Node {
		return &Node{Name: "n", Slices: []string{"n-gpu"}, Devices: len(versions), DriverVersions: versions}
	}
	for _, tt := range []struct {
		name  string
		label string
		n     *Node
		want  Driver
	}{
		{"label alone", "580.95.05", nil, Driver{Version: "580.95.05"}},
		{"slices without a version", "580.95.05", node(), Driver{Version: "580.95.05"}},
		{"no label, no slices", "", nil, Driver{}},
		{"slices agree with the label", "580.95.05", node("580.95.5"), Driver{Version: "580.95.05"}},
		{"slices alone", "", node("580.95.5"), Driver{Version: "580.95.05", FromSlices: true}},
		{"slices disagree with the label", "580.95.05", node("570.172.8"), Driver{Version: "580.95.05",
			Conflict: "nvidia.com/cuda.driver-version.full says 580.95.05, its ResourceSlices of gpu.nvidia.com (n-gpu) say 570.172.8"}},
		{"slices disagree among themselves", "", node("570.172.8", "580.95.5"), Driver{
			Conflict: "its ResourceSlices of gpu.nvidia.com (n-gpu) publish more than one driver: 570.172.8 and 580.95.5"}},
		{"slices publish no driver version", "", node("1.0.0-rc.1"), Driver{
			Conflict: "its ResourceSlices of gpu.nvidia.com (n-gpu) publish driver 1.0.0-rc.1, which is no NVIDIA driver version (major.minor.patch)"}},
	} {
		if d := cmp.Diff(tt.want, DriverOf(tt.label, tt.n)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
