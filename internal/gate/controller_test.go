package gate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// controllerDeployment is gpufleet-controller's Deployment running image,
// with updated of its two replicas on the new version (all Available).
func controllerDeployment(image string, updated, available int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "gpufleet-controller", "namespace": "gpufleet-system", "generation": int64(3)},
		"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "manager", "image": image},
		}}}},
		"status": map[string]any{"observedGeneration": int64(3), "replicas": int64(2), "updatedReplicas": updated,
			"readyReplicas": available, "availableReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": map[bool]string{true: "True", false: "False"}[available == 2]}}},
	}}
}

func TestControllerCheck(t *testing.T) {
	const want = "registry.internal.example/gpufleet/gpufleet-controller:v0.10.0"
	for _, tc := range []struct {
		name string
		dep  *unstructured.Unstructured
		ok   bool
		msg  string
	}{
		{"available at the release's version", controllerDeployment(want, 2, 2), true, ""},
		{"missing", nil, false, "does not exist"},
		{"the old version", controllerDeployment("registry.internal.example/gpufleet/gpufleet-controller:v0.9.0", 2, 2), false, "runs registry.internal.example/gpufleet/gpufleet-controller:v0.9.0, " + want + " expected"},
		{"half replaced", controllerDeployment(want, 1, 2), false, "Updated: 1/2"},
		{"not available", controllerDeployment(want, 2, 0), false, "vailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := manifestsExpect(t)
			e.ControllerImage = want
			o := healthy(e)
			o.Controller = tc.dep
			var got *Check
			for _, c := range Evaluate(e, o) {
				if c.Name == ControllerCheck() {
					got = &c
				}
			}
			if got == nil {
				t.Fatal("no controller check")
			}
			if (got.Status == Pass) != tc.ok || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("check %s: %s (%s), want ok=%t and a message with %q", got.Name, got.Status, got.Message, tc.ok, tc.msg)
			}
		})
	}
}
