package v1alpha1_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestActuatorIsOneContract: the CRD's default and enum for spec.actuator,
// the fleet parser's default and the planner's reading of an unset field
// (ActuatorOf) say the same.
func TestActuatorIsOneContract(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/gpufleet.io_driverrollouts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crdcheck.ParseCRDs(data)
	if err != nil || len(crds) != 1 {
		t.Fatalf("parse the CRD: %v (%d CRDs)", err, len(crds))
	}
	f, ok := crdcheck.Fields(crds[0])[v1alpha1.GroupVersion.Version]["spec.actuator"]
	if !ok {
		t.Fatal("spec.actuator is not in the CRD: run make generate")
	}
	var def string
	if err := json.Unmarshal(f.Default, &def); err != nil || v1alpha1.Actuator(def) != v1alpha1.DefaultActuator {
		t.Errorf("the CRD defaults spec.actuator to %s, the API's constant is %q", f.Default, v1alpha1.DefaultActuator)
	}
	var enum []string
	for _, e := range f.Enum {
		var s string
		_ = json.Unmarshal(e, &s)
		enum = append(enum, s)
	}
	if want := []string{string(v1alpha1.ActuatorGPUFleet), string(v1alpha1.ActuatorGPUOperator)}; !slices.Equal(enum, want) {
		t.Errorf("the CRD's enum is %v, want %v", enum, want)
	}
	if got := fleet.DefaultPolicy().Actuator; got != v1alpha1.DefaultActuator {
		t.Errorf("the fleet parser defaults the actuator to %q", got)
	}
	if got := v1alpha1.ActuatorOf(&v1alpha1.DriverRolloutSpec{}); got != v1alpha1.DefaultActuator {
		t.Errorf("an unset spec.actuator reads as %q", got)
	}
}

// TestOperatorUpgradingIsTheOperatorsCount: the states the operator counts
// as upgrades in progress (k8s-operator-libs GetUpgradesInProgress) are all
// but none, upgrade-required and upgrade-done; upgrade-failed among them.
func TestOperatorUpgradingIsTheOperatorsCount(t *testing.T) {
	var got []string
	for _, s := range append([]string{""}, v1alpha1.OperatorStates...) {
		if v1alpha1.OperatorUpgrading(s) {
			got = append(got, s)
		}
	}
	want := []string{"cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
		"pod-restart-required", "validation-required", "uncordon-required", "upgrade-failed"}
	if !slices.Equal(got, want) {
		t.Errorf("upgrading states %v, want %v", got, want)
	}
}
