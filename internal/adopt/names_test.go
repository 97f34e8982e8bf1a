package adopt

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseProduct(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA-H100-80GB-HBM3":                   "NVIDIA-H100-80GB-HBM3",
		"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb":        "NVIDIA-A100-SXM4-40GB",
		"NVIDIA-H100-80GB-HBM3-SHARED":            "NVIDIA-H100-80GB-HBM3",
		"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED": "NVIDIA-A100-SXM4-40GB",
		"NVIDIA-A100-SXM4-80GB-MIG-3g.40gb+me":    "NVIDIA-A100-SXM4-80GB",
	} {
		if got := BaseProduct(in); got != want {
			t.Errorf("BaseProduct(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProductModel(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA-H100-80GB-HBM3":   "h100",
		"NVIDIA-A100-SXM4-80GB":   "a100",
		"NVIDIA-H200":             "h200",
		"NVIDIA-L40S":             "l40s",
		"Tesla-T4":                "t4",
		"Tesla-V100-SXM2-16GB":    "v100",
		"NVIDIA-A10G":             "a10g",
		"NVIDIA-GB200":            "gb200",
		"NVIDIA-GH200-480GB":      "gh200",
		"NVIDIA-RTX-A6000":        "a6000",
		"NVIDIA-GeForce-RTX-4090": "geforce-rtx-4090",
		"NVIDIA-H100-PCIe":        "h100",
	} {
		if got := ProductModel(in); got != want {
			t.Errorf("ProductModel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPoolNames(t *testing.T) {
	k := func(product, mig string) gpuKey { return gpuKey{product, mig} }
	tests := []struct {
		name   string
		groups []gpuKey
		taken  []string
		want   map[gpuKey]string
	}{
		{"one product", []gpuKey{k(h100, "")}, nil, map[gpuKey]string{k(h100, ""): "h100"}},
		{"two products", []gpuKey{k(h100, ""), k(h200, "")}, nil, map[gpuKey]string{k(h100, ""): "h100", k(h200, ""): "h200"}},
		{"MIG beside whole GPUs", []gpuKey{k(h100, ""), k(h100, "all-1g.10gb")}, nil,
			map[gpuKey]string{k(h100, ""): "h100", k(h100, "all-1g.10gb"): "h100-mig"}},
		{"one model, two products: the whole product names them", []gpuKey{k(a100s, ""), k(a100, ""), k(h100, "")}, nil,
			map[gpuKey]string{k(a100s, ""): "a100-sxm4-40gb", k(a100, ""): "a100-sxm4-80gb", k(h100, ""): "h100"}},
		{"two MIG layouts of one product: the layout names them", []gpuKey{k(a100, ""), k(a100, "all-1g.10gb"), k(a100, "all-2g.20gb"), k(a100, "all-balanced")}, nil,
			map[gpuKey]string{k(a100, ""): "a100", k(a100, "all-1g.10gb"): "a100-mig-1g-10gb", k(a100, "all-2g.20gb"): "a100-mig-2g-20gb", k(a100, "all-balanced"): "a100-mig-balanced"}},
		{"a labelled pool took the name", []gpuKey{k(h100, "")}, []string{"h100", "h100-2"}, map[gpuKey]string{k(h100, ""): "h100-3"}},
		{"a name too long is cut to 63", []gpuKey{k("NVIDIA-GeForce-RTX-4090-Laptop-GPU-With-A-Very-Long-Product-Name-Indeed", "")}, nil,
			map[gpuKey]string{k("NVIDIA-GeForce-RTX-4090-Laptop-GPU-With-A-Very-Long-Product-Name-Indeed", ""): "geforce-rtx-4090-laptop-gpu-with-a-very-long-product-name-indee"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken := map[string]bool{}
			for _, n := range tt.taken {
				taken[n] = true
			}
			got := poolNames(tt.groups, taken)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(gpuKey{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, n := range got {
				if !ValidName(n) {
					t.Errorf("%q is not a valid pool name", n)
				}
			}
		})
	}
}

// TestPoolNamesDeterministic: the names do not depend on the order the
// nodes were listed in.
func TestPoolNamesDeterministic(t *testing.T) {
	ns := []*nodeB{gpuNode("a", a100, drv570), gpuNode("b", a100s, drv570).mig("all-1g.5gb"), gpuNode("c", a100s, drv570), gpuNode("d", a100, drv570).mig("all-1g.10gb")}
	first := Judge(recorded([]Cluster{cluster("x", ns...)}), Options{}).Fleet.Clusters[0].Pools
	rev := []*nodeB{ns[3], ns[2], ns[1], ns[0]}
	again := Judge(recorded([]Cluster{cluster("x", rev...)}), Options{}).Fleet.Clusters[0].Pools
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("another node order, other pools (-first +again):\n%s", diff)
	}
	var names []string
	for _, p := range first {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"a100-sxm4-40gb", "a100-sxm4-40gb-mig", "a100-sxm4-80gb", "a100-sxm4-80gb-mig"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestDefaultEnvironment(t *testing.T) {
	for ctx, want := range map[string]string{
		"stg-h100": "staging", "eu-dev-1": "staging", "gpu_test": "staging", "QA.cluster": "staging", "staging": "staging",
		"prod-a": "prod", "devon-prod": "prod", "gpu-1": "prod", "latest": "prod",
	} {
		if got := DefaultEnvironment(ctx); got != want {
			t.Errorf("DefaultEnvironment(%q) = %q, want %q", ctx, got, want)
		}
	}
}

func TestDefaultWaves(t *testing.T) {
	cs := []*FleetCluster{
		{Name: "prod-b", Environment: "prod"}, {Name: "prod-a", Environment: "prod"},
		{Name: "eu", Environment: "canary"}, {Name: "stg", Environment: "staging"}, {Name: "staging", Environment: "staging"},
	}
	for _, c := range cs {
		c.Context = c.Name
	}
	got := gatedWaves(DefaultWaves(cs))
	want := []Wave{
		{Name: "staging-wave", Clusters: []string{"staging", "stg"}, Canary: "staging", PauseAfterCanary: true},
		{Name: "canary", Clusters: []string{"eu"}, RequireApproval: true},
		{Name: "prod", Clusters: []string{"prod-a", "prod-b"}, Canary: "prod-a", PauseAfterCanary: true, RequireApproval: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCheckOptions(t *testing.T) {
	contexts := []string{"a", "b", "c"}
	if err := CheckOptions(contexts, Options{Release: "r1", Environments: map[string]string{"a": "staging"},
		Waves: []WaveSpec{{"one", []string{"a"}}, {"two", []string{"c", "b"}}}}); err != nil {
		t.Errorf("good options: %v", err)
	}
	err := CheckOptions(contexts, Options{Release: "R.1", Environments: map[string]string{"x": "prod", "a": "Prod"},
		Waves: []WaveSpec{{"one", []string{"a", "z"}}, {"one", []string{"a"}}, {"b", nil}}})
	if err == nil {
		t.Fatal("bad options passed")
	}
	for _, s := range []string{
		`--release "R.1" is not a valid release name`,
		`--environment names context "x", which init does not read (it reads a, b, c)`,
		`"Prod" is not a valid environment name`,
		`--wave one names context "z"`,
		"--wave one is given twice",
		`context "a" is in two waves: one and one`,
		"--wave b has the name of a cluster",
		"--wave b lists no contexts",
		`context "b" is in no --wave`,
		`context "c" is in no --wave`,
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q:\n%v", s, err)
		}
	}
}

func TestReleaseName(t *testing.T) {
	for _, tt := range []struct {
		r    Release
		want string
	}{
		{Release{GPUOperator: "v25.3.4", NetworkOperator: "v25.4.0", Driver: "570.172.08"}, "gpuop-v25-3-4-netop-v25-4-0-drv-570-172-08"},
		{Release{GPUOperator: "v25.10.1", Driver: "580.95.05"}, "gpuop-v25-10-1-drv-580-95-05"},
		{Release{GPUOperator: "v26.7.0", Driver: "570", Precompiled: true}, "gpuop-v26-7-0-drv-570"},
	} {
		if got := ReleaseName(tt.r); got != tt.want || !ValidName(got) {
			t.Errorf("ReleaseName(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}
