package gate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// deployment is an operator Deployment as kstatus sees it: label is its
// helm.sh/chart label, available whether its pods are up.
func deployment(name, label string, available bool) *unstructured.Unstructured {
	status := "False"
	if available {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(1), "labels": map[string]any{labelHelmChart: label}},
		"spec":     map[string]any{"replicas": int64(1)},
		"status": map[string]any{
			"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1),
			"readyReplicas": int64(1), "availableReplicas": map[bool]int64{true: 1, false: 0}[available],
			"conditions": []any{map[string]any{"type": "Available", "status": status}},
		},
	}}
}

// TestGateManifestsMode: with the charts pre-rendered there is no
// HelmRelease to judge; the gate judges each operator's Deployment by its
// chart label and availability, and fails closed on any mismatch.
func TestGateManifestsMode(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	f.Charts.Mode = fleet.ModeManifests
	e := Expect(f, "stg-h100", rev)
	if len(e.HelmReleases) != 0 || len(e.OperatorDeployments) != 2 {
		t.Fatalf("manifests mode: HelmReleases %v, OperatorDeployments %v", e.HelmReleases, e.OperatorDeployments)
	}
	good := func() Observed {
		o := healthy(e)
		o.Deployments = map[string]*unstructured.Unstructured{}
		for key, label := range e.OperatorDeployments {
			_, name := cutKey(key)
			// The GPU Operator's chart writes "gpu-operator-v25.3.4".
			label = strings.Replace(label, name+"-", name+"-v", 1)
			o.Deployments[key] = deployment(name, label, true)
		}
		return o
	}
	if failed := failedChecks(Evaluate(e, good())); len(failed) != 0 {
		t.Fatalf("a converged manifests-mode cluster fails: %v", failed)
	}
	key := "gpu-operator/gpu-operator"
	for name, breakIt := range map[string]func(o Observed){
		"missing":       func(o Observed) { o.Deployments[key] = nil },
		"other version": func(o Observed) { o.Deployments[key] = deployment("gpu-operator", "gpu-operator-v24.9.2", true) },
		"not available": func(o Observed) { o.Deployments[key] = deployment("gpu-operator", e.OperatorDeployments[key], false) },
	} {
		o := good()
		breakIt(o)
		failed := failedChecks(Evaluate(e, o))
		if len(failed) != 1 || failed[0] != "operators/Deployment/"+key {
			t.Errorf("%s: failed checks %v, want only operators/Deployment/%s", name, failed, key)
		}
	}
}

func failedChecks(checks []Check) []string {
	var out []string
	for _, c := range checks {
		if c.Status != Pass {
			out = append(out, c.Name.String())
		}
	}
	return out
}
