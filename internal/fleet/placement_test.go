package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStackPlacementByGPUNeeds is the class of issue 17 in the fleet file:
// each service runs on the clusters of its environment with a pool that
// gives it what it asks for (GPU product, MIG slice, whole GPUs), or on the
// clusters its setting lists; one that no cluster can run, or a listed
// cluster that cannot, is an error with its position.
func TestStackPlacementByGPUNeeds(t *testing.T) {
	base := mustRead(t, "../../examples/fleet.toml")
	f, err := Parse("fleet.toml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string][]string{}
	for _, svc := range []string{"vllm", "tei-embed", "qdrant"} {
		placed[svc] = f.ServiceClusters(svc, "prod")
	}
	want := map[string][]string{
		"vllm":      {"prod-h100-a", "prod-h100-b"}, // whole H100s
		"tei-embed": {"prod-a100"},                  // the all-1g.10gb pool
		"qdrant":    {"prod-a100", "prod-h100-a", "prod-h100-b"},
	}
	if diff := cmp.Diff(want, placed); diff != "" {
		t.Errorf("placement in prod (-want +got):\n%s", diff)
	}
	if got := f.ServicesOn("prod-a100"); strings.Contains(strings.Join(got, ","), "vllm") {
		t.Errorf("prod-a100 runs %v: vllm asks for H100s", got)
	}

	explicit := strings.Replace(base, "[stack.services.qdrant.environments.prod]\n", "[stack.services.qdrant.environments.prod]\nclusters = [\"prod-h100-b\"]\n", 1)
	if f, err := Parse("fleet.toml", []byte(explicit)); err != nil {
		t.Fatal(err)
	} else if got := f.ServiceClusters("qdrant", "prod"); !cmp.Equal(got, []string{"prod-h100-b"}) {
		t.Errorf("explicit clusters: qdrant on %v, want [prod-h100-b]", got)
	}

	tests := []struct {
		name, from, to string
		want           string
	}{
		{
			name: "product and MIG each exist, never on one pool",
			from: "[stack.services.tei-rerank.environments.prod]\nmig = \"1g.10gb\"",
			to:   "[stack.services.tei-rerank.environments.prod]\nmig = \"1g.10gb\"\ngpu-product = \"NVIDIA-H200\"",
			want: `fleet.toml:247:2: stack.services.tei-rerank.environments.prod: no cluster of environment "prod" can run tei-rerank: it asks for GPU NVIDIA-H200, MIG slice 1g.10gb, on one pool; clusters: prod-a100 (a100-mig: NVIDIA-A100-SXM4-80GB all-1g.10gb, a100: NVIDIA-A100-SXM4-80GB); prod-h100-a (h100: NVIDIA-H100-80GB-HBM3); prod-h100-b (h100: NVIDIA-H100-80GB-HBM3, h200: NVIDIA-H200)`,
		},
		{
			name: "a listed cluster that cannot run it",
			from: "[stack.services.tei-rerank.environments.prod]\n",
			to:   "[stack.services.tei-rerank.environments.prod]\nclusters = [\"prod-h100-a\"]\n",
			want: `fleet.toml:248:13: stack.services.tei-rerank.environments.prod.clusters[0]: cluster prod-h100-a cannot run tei-rerank: it asks for MIG slice 1g.10gb, and the cluster's pools are h100: NVIDIA-H100-80GB-HBM3`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("example lacks %q", tt.from)
			}
			_, err := Parse("fleet.toml", []byte(strings.Replace(base, tt.from, tt.to, 1)))
			var probs Problems
			if !errors.As(err, &probs) {
				t.Fatalf("want Problems, got %v", err)
			}
			if got := probs.Error(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
