package promote

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

func TestMakePlan(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := MakePlan(f, startR, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`+rollout = { release = "r2026-10", wave = "staging" }`}, p.FleetLines); diff != "" {
		t.Errorf("fleet lines (-want +got):\n%s", diff)
	}
	// Only the objects whose content changes: the rest of the cluster, and
	// every other cluster, stay byte for byte the same.
	want := map[string][]string{"stg-h100": {
		"~ NicClusterPolicy nic-cluster-policy: OFED driver 25.04-0.6.1.0-2 → doca3.2.0-25.10-1.2.8.0-2",
		"+ NVIDIADriver h100-580-95-05",
		"~ DriverRollout r2026-10: name r2026-06 → r2026-10, driver 570.172.08 → 580.95.05",
		"~ HelmRelease gpu-operator: v25.3.4 → v25.10.1",
		"~ HelmRelease network-operator: v25.4.0 → v25.10.0",
	}}
	if diff := cmp.Diff(want, p.Clusters); diff != "" {
		t.Errorf("cluster changes (-want +got):\n%s", diff)
	}
}
