package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMIGConfigMustBeOfferedByProduct: a pool's MIG configuration is checked
// against the profiles its GPU product offers (NVIDIA's published MIG
// profiles), not only for its form; a GPU without MIG refuses any, and the
// message lists what the product does offer.
func TestMIGConfigMustBeOfferedByProduct(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	const pool = "product = \"NVIDIA-A100-SXM4-80GB\"\nnodes = 4\nmig = \"all-1g.10gb\""
	if !strings.Contains(base, pool) {
		t.Fatal("testdata/minimal.toml no longer has the A100 MIG pool this test edits")
	}
	withPool := func(product, mig string) string {
		return strings.Replace(base, pool, "product = \""+product+"\"\nnodes = 4\nmig = \""+mig+"\"", 1)
	}
	valid := [][2]string{
		{"NVIDIA-A100-SXM4-40GB", "all-1g.5gb"},
		{"NVIDIA-A100-PCIE-40GB", "all-7g.40gb"},
		{"NVIDIA-A100-SXM4-80GB", "all-1g.10gb.me"},
		{"NVIDIA-A100-80GB-PCIe", "all-7g.80gb"},
		{"NVIDIA-A30", "all-2g.12gb"},
		{"NVIDIA-H100-80GB-HBM3", "all-3g.40gb"},
		{"NVIDIA-H100-PCIe", "all-balanced"},
		{"NVIDIA-H100-NVL", "all-3g.47gb"},
		{"NVIDIA-H100-SXM5-94GB", "all-7g.94gb"},
		{"NVIDIA-H200", "all-1g.18gb"},
		{"NVIDIA-H200-NVL", "all-7g.141gb"},
		{"NVIDIA-GH200-480GB", "all-7g.96gb"},
		{"NVIDIA-GH200-144G-HBM3e", "all-1g.36gb"},
		{"NVIDIA-B200", "all-3g.90gb"},
		{"NVIDIA-GB200", "all-7g.186gb"},
		{"NVIDIA-GB200", "all-disabled"},
	}
	for _, v := range valid {
		if _, err := Parse("f.toml", []byte(withPool(v[0], v[1]))); err != nil {
			t.Errorf("%s with %s must be accepted:\n%v", v[0], v[1], err)
		}
	}
	tests := []struct {
		product, mig string
		want         []string
	}{
		{"NVIDIA-A100-SXM4-80GB", "all-1g.5gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-A100-SXM4-80GB (A100 80GB) does not offer all-1g.5gb: use one of all-disabled, all-balanced, all-1g.10gb, all-1g.10gb.me, all-1g.20gb, all-2g.20gb, all-3g.40gb, all-4g.40gb, all-7g.80gb`,
		}},
		{"NVIDIA-L40S", "all-1g.10gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-L40S does not support MIG: remove mig from this pool (GPUs with MIG: A100 40GB, A100 80GB, A30 24GB, H100 94GB, H100 96GB, H100 80GB, H200 141GB, GH200 144GB HBM3e, GH200 96GB, B200 180GB, GB200 186GB)`,
		}},
		{"NVIDIA-L40S", "all-disabled", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-L40S does not support MIG: remove mig from this pool (GPUs with MIG: A100 40GB, A100 80GB, A30 24GB, H100 94GB, H100 96GB, H100 80GB, H200 141GB, GH200 144GB HBM3e, GH200 96GB, B200 180GB, GB200 186GB)`,
		}},
		{"NVIDIA-H100-80GB-HBM3", "all-3g.47gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-H100-80GB-HBM3 (H100 80GB) does not offer all-3g.47gb: use one of all-disabled, all-balanced, all-1g.10gb, all-1g.10gb.me, all-1g.20gb, all-2g.20gb, all-3g.40gb, all-4g.40gb, all-7g.80gb`,
		}},
		{"NVIDIA-H200", "all-1g.10gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-H200 (H200 141GB) does not offer all-1g.10gb: use one of all-disabled, all-balanced, all-1g.18gb, all-1g.18gb.me, all-1g.35gb, all-2g.35gb, all-3g.71gb, all-4g.71gb, all-7g.141gb`,
		}},
		{"NVIDIA-B200", "all-7g.186gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-B200 (B200 180GB) does not offer all-7g.186gb: use one of all-disabled, all-balanced, all-1g.23gb, all-1g.23gb.me, all-1g.45gb, all-2g.45gb, all-3g.90gb, all-4g.90gb, all-7g.180gb`,
		}},
		{"NVIDIA-GB200", "all-1g.45gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: NVIDIA-GB200 (GB200 186GB) does not offer all-1g.45gb: use one of all-disabled, all-balanced, all-1g.23gb, all-1g.23gb.me, all-1g.47gb, all-2g.47gb, all-3g.93gb, all-4g.93gb, all-7g.186gb`,
		}},
		{"NVIDIA-A30", "all-1g.6gb+me", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: "all-1g.6gb+me" is not a MIG configuration: use e.g. all-1g.10gb, all-balanced or all-disabled`,
		}},
		{"NVIDIA-RTX-PRO-6000-Blackwell", "all-1g.24gb", []string{
			`f.toml:35:1: clusters.prod-b.pools[0].mig: gpufleet does not know the MIG profiles of NVIDIA-RTX-PRO-6000-Blackwell, so it cannot check "all-1g.24gb": MIG is checked for A100 40GB, A100 80GB, A30 24GB, H100 94GB, H100 96GB, H100 80GB, H200 141GB, GH200 144GB HBM3e, GH200 96GB, B200 180GB, GB200 186GB (write product as GPU Feature Discovery reports it, e.g. NVIDIA-A100-SXM4-80GB)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.product+" "+tt.mig, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, problemStrings(t, withPool(tt.product, tt.mig))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
