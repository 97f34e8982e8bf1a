package crdcheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidateAsWrittenReportsDefaultedRequired: v26.7.0's NVIDIADriver
// requires spec.default and defaults it. The API server accepts an object
// without it; an offline check that applies no defaults does not, and
// ValidateAsWritten says so.
func TestValidateAsWrittenReportsDefaultedRequired(t *testing.T) {
	set := gpuOperatorSet(t, operatorsDir(t), "v26.7.0")
	obj := decodeOne(t, `apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: h100}
spec:
  driverType: gpu
  image: driver
  repository: nvcr.io/nvidia
  version: "580.95.05"
  nodeSelector: {gpufleet.io/driver: "580.95.05"}
`)
	if got := messages(set.Validate(t.Context(), obj)); len(got) != 0 {
		t.Fatalf("the API server accepts it, Validate says %v", got)
	}
	want := []string{"spec.default: Required value (" + RuleDefaultedRequired + ")"}
	if diff := cmp.Diff(want, messages(set.ValidateAsWritten(t.Context(), obj))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	obj.Object["spec"].(map[string]any)["default"] = false
	if got := messages(set.ValidateAsWritten(t.Context(), obj)); len(got) != 0 {
		t.Errorf("with spec.default written: %v", got)
	}
}
