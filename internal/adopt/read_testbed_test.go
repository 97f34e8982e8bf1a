package adopt_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/adopt"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// gfdLabels are GPU Feature Discovery's labels of a node with a loaded
// driver.
func gfdLabels(product, driver string) map[string]string {
	return map[string]string{
		v1alpha1.LabelGPUPresent:    "true",
		v1alpha1.LabelGFDProduct:    product,
		v1alpha1.LabelGFDDriverFull: driver,
	}
}

// createNode creates a node with labels whose kubelet reports gpus
// allocatable nvidia.com/gpu (the device plugin's).
func createNode(t *testing.T, c client.Client, name string, labels map[string]string, gpus int64) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	if gpus > 0 {
		n.Status.Allocatable[v1alpha1.ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	if err := c.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// createSlice creates the ResourceSlice a DRA driver publishes for node:
// one device per product, each with the driver version.
func createSlice(t *testing.T, c client.Client, node, driver, version string, products ...string) {
	t.Helper()
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: new(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
	}}
	for i, p := range products {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-" + string(rune('0'+i)), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			dra.AttributeProductName:           {StringValue: new(p)},
			v1alpha1.DRAAttributeDriverVersion: {VersionValue: new(version)},
		}})
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// TestReadClusterDRA reads a real API server that serves resource.k8s.io/v1
// (the testbed's, as Kubernetes does since 1.34): a node whose GPUs the
// GPU DRA driver publishes is read though it carries no GPU label at all,
// with what its slices say; a device-plugin node with its allocatable
// GPUs; a node only another DRA driver publishes (a NIC) and slices of a
// node that is gone are not GPU nodes.
func TestReadClusterDRA(t *testing.T) {
	tb := testbed.New(t, testbed.Options{Clusters: []string{"dra"}})
	c := tb.Cluster("dra").Client
	createNode(t, c, "plugin-1", gfdLabels("NVIDIA-H100-80GB-HBM3", "570.172.08"), 8)
	createNode(t, c, "dra-1", map[string]string{"kubernetes.io/os": "linux"}, 0)
	createNode(t, c, "dra-2", gfdLabels("NVIDIA-H200", "570.172.08"), 0)
	createNode(t, c, "nic-1", map[string]string{"kubernetes.io/os": "linux"}, 0)
	createSlice(t, c, "dra-1", v1alpha1.DRADriverGPU, "570.172.8", "NVIDIA H200", "NVIDIA H200")
	createSlice(t, c, "dra-2", v1alpha1.DRADriverGPU, "570.172.8", "NVIDIA H200")
	createSlice(t, c, "nic-1", "dra.net", "1.0.0", "ConnectX-7")
	createSlice(t, c, "gone-1", v1alpha1.DRADriverGPU, "570.172.8", "NVIDIA H200")

	rc, err := adopt.NewClient(tb.Cluster("dra").Config)
	if err != nil {
		t.Fatal(err)
	}
	got, err := adopt.ReadCluster(t.Context(), rc, "dra")
	if err != nil {
		t.Fatal(err)
	}
	slices := func(node string, devices int) *dra.Node {
		return &dra.Node{Name: node, Slices: []string{node + "-" + v1alpha1.DRADriverGPU}, Devices: devices, Products: []string{"NVIDIA H200"}, DriverVersions: []string{"570.172.8"}}
	}
	want := []adopt.Node{
		{Name: "dra-1", Labels: map[string]string{"kubernetes.io/os": "linux"}, DRA: slices("dra-1", 2)},
		{Name: "dra-2", Labels: gfdLabels("NVIDIA-H200", "570.172.08"), DRA: slices("dra-2", 1)},
		{Name: "plugin-1", Labels: gfdLabels("NVIDIA-H100-80GB-HBM3", "570.172.08"), DevicePluginGPUs: 8},
	}
	if d := cmp.Diff(want, got.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
}

// TestReadClusterWithoutDRA reads a real API server that does not serve
// resource.k8s.io/v1 (a cluster before Kubernetes 1.34, or with DRA off):
// the GPU nodes are read by their labels, as before, and nothing is said.
func TestReadClusterWithoutDRA(t *testing.T) {
	tb := testbed.New(t, testbed.Options{Clusters: []string{"old"}, DisabledAPIs: []string{"resource.k8s.io/v1"}})
	c := tb.Cluster("old").Client
	createNode(t, c, "plugin-1", gfdLabels("NVIDIA-H100-80GB-HBM3", "570.172.08"), 8)
	createNode(t, c, "cpu-1", map[string]string{"kubernetes.io/os": "linux"}, 0)
	rc, err := adopt.NewClient(tb.Cluster("old").Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.List(t.Context(), &resourcev1.ResourceSliceList{}); err == nil {
		t.Fatal("the API server serves resource.k8s.io/v1: the test would not test a cluster without it")
	}
	got, err := adopt.ReadCluster(t.Context(), rc, "old")
	if err != nil {
		t.Fatalf("a cluster without resource.k8s.io/v1: %v", err)
	}
	// Read by metadata alone, as before DRA: no allocatable GPUs read.
	want := []adopt.Node{{Name: "plugin-1", Labels: gfdLabels("NVIDIA-H100-80GB-HBM3", "570.172.08")}}
	if d := cmp.Diff(want, got.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
}
