package promote

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestStartRefusesControllerAndDriverTogether: a release that changes the
// controller and the driver in one go is refused, naming both; the
// controller alone starts, and its plan shows the new image where it
// arrives.
func TestStartRefusesControllerAndDriverTogether(t *testing.T) {
	f, err := fleet.Load("../render/testdata/controller/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = MakePlan(f, func(f *fleet.Fleet) (Step, error) { return Start(f, "r3") }, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "v0.9.0 → v0.10.0") || !strings.Contains(err.Error(), "570.172.08 → 580.95.05") {
		t.Fatalf("start r3: %v, want a refusal naming the controller and driver changes", err)
	}
	p, err := MakePlan(f, func(f *fleet.Fleet) (Step, error) { return Start(f, "r2") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (The HelmRelease changes only its gpufleet.io/release label.)
	want := map[string][]string{"stg": {
		"~ DriverRollout r2: name r1 → r2",
		"~ Deployment gpufleet-controller: image registry.internal.example/gpufleet/gpufleet-controller:v0.9.0 → registry.internal.example/gpufleet/gpufleet-controller:v0.10.0",
		"~ HelmRelease gpu-operator: changed",
	}}
	if diff := cmp.Diff(want, p.Clusters); diff != "" {
		t.Errorf("plan of start r2 (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(p.Step.Details, "\n"), "gpufleet-controller v0.9.0 → v0.10.0") {
		t.Errorf("start r2 does not say the controller changes: %q", p.Step.Details)
	}
}
