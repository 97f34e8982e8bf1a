package gate

import (
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestStackPlacementByGPUNeeds is the gate's part of issue 17: a cluster's
// gate expects the app Kustomizations of the services placed on it, and
// only those (a service that cannot run there has none to wait for).
func TestStackPlacementByGPUNeeds(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cluster, kustomization string
		want                   bool
	}{
		{"prod-a100", "app-vllm", false},
		{"prod-a100", "app-tei-embed", true},
		{"prod-h100-a", "app-vllm", true},
		{"prod-h100-a", "app-tei-rerank", false},
		{"prod-h100-a", "app-qdrant", true},
	} {
		e := Expect(f, tc.cluster, "abc")
		if got := slices.Contains(e.Kustomizations, tc.kustomization); got != tc.want {
			t.Errorf("%s expects %s: %v, want %v (%v)", tc.cluster, tc.kustomization, got, tc.want, e.Kustomizations)
		}
	}
}
