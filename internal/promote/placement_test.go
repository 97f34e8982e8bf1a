package promote

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestStackPlacementByGPUNeeds is status's part of issue 17: it says where
// each service of the serving stack runs.
func TestStackPlacementByGPUNeeds(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, sp := range StatusOf(f).Services {
		got[sp.Service] = sp.Clusters
	}
	for svc, want := range map[string][]string{
		"vllm":      {"prod-h100-a", "prod-h100-b", "stg-h100"},
		"tei-embed": {"prod-a100", "stg-h100"},
		"litellm":   {"prod-a100", "prod-h100-a", "prod-h100-b", "stg-h100"},
	} {
		if diff := cmp.Diff(want, got[svc]); diff != "" {
			t.Errorf("%s runs on (-want +got):\n%s", svc, diff)
		}
	}
}
