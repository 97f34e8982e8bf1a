package nodesim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

func TestParsePool(t *testing.T) {
	got, err := ParsePool("name=h100,product=NVIDIA-H100-80GB-HBM3,nodes=4,driver=570.172.08,mig=all-1g.10gb,managed-nics=true")
	if err != nil {
		t.Fatal(err)
	}
	want := Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 4, Driver: "570.172.08", MIGConfig: "all-1g.10gb", ManagedNICs: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePool (-want +got):\n%s", diff)
	}
}

func TestParsePoolReportsEveryProblem(t *testing.T) {
	_, err := ParsePool("name=x,nodes=zero,driver=latest,color=red")
	if err == nil {
		t.Fatal("ParsePool succeeded, want errors")
	}
	for _, want := range []string{"nodes", "unknown key \"color\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, err = ParsePool("name=x,nodes=0,driver=latest")
	for _, want := range []string{"product is empty", "at least 1", "not of the form"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestNodeLabels(t *testing.T) {
	p := Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 1, Driver: "580.95.05"}.withDefaults()
	got := nodeLabels(p, "h100-0", "580.95.05")
	want := map[string]string{
		"kubernetes.io/hostname":                                  "h100-0",
		"kubernetes.io/os":                                        "linux",
		"kubernetes.io/arch":                                      "amd64",
		"gpufleet.io/pool":                                        "h100",
		"gpufleet.io/driver":                                      "580.95.05",
		"kwok.x-k8s.io/node":                                      "fake",
		"feature.node.kubernetes.io/pci-10de.present":             "true",
		"feature.node.kubernetes.io/system-os_release.ID":         "ubuntu",
		"feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
		"feature.node.kubernetes.io/kernel-version.full":          "5.15.0-139-generic",
		"nvidia.com/gpu.product":                                  "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":                                    "8",
		"nvidia.com/gpu.memory":                                   "81559",
		"nvidia.com/gpu.family":                                   "hopper",
		"nvidia.com/mig.capable":                                  "true",
		"nvidia.com/mig.config":                                   "all-disabled",
		"nvidia.com/mig.config.state":                             "success",
		"nvidia.com/cuda.driver-version.major":                    "580",
		"nvidia.com/cuda.driver-version.minor":                    "95",
		"nvidia.com/cuda.driver-version.revision":                 "05",
		"nvidia.com/cuda.driver-version.full":                     "580.95.05",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodeLabels (-want +got):\n%s", diff)
	}
}

// TestProvisionedPool: a provisioned pool's nodes register with no gpufleet
// label, with GFD's driver labels only when they run a driver, and only a
// provisioned pool may have no driver.
func TestProvisionedPool(t *testing.T) {
	p := Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 1, Provisioned: true}
	if err := p.Validate(); err != nil {
		t.Fatalf("a provisioned pool without a driver: %v", err)
	}
	if err := (Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 1}).Validate(); err == nil {
		t.Error("a pool without a driver that is not provisioned was accepted")
	}
	fresh := nodeLabels(p.withDefaults(), "h100-0", "")
	for _, k := range []string{v1alpha1.LabelDriver, v1alpha1.LabelPool, v1alpha1.LabelGFDDriverFull, v1alpha1.LabelGFDDriverMajor} {
		if _, ok := fresh[k]; ok {
			t.Errorf("a new node carries %s=%q", k, fresh[k])
		}
	}
	if fresh[v1alpha1.LabelGFDProduct] != p.Product || fresh[v1alpha1.LabelNFDNvidiaPCI] != "true" {
		t.Errorf("a new node lacks the product or NFD's PCI label: %v", fresh)
	}
	adopted := nodeLabels(p.withDefaults(), "h100-0", "570.172.08")
	if adopted[v1alpha1.LabelGFDDriverFull] != "570.172.08" {
		t.Errorf("a node running a driver does not report it: %v", adopted)
	}
	for _, k := range []string{v1alpha1.LabelDriver, v1alpha1.LabelPool} {
		if _, ok := adopted[k]; ok {
			t.Errorf("an adopted node carries %s", k)
		}
	}
}
