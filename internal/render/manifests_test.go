package render

import (
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// fakeCharts renders a chart to one ConfigMap naming it, and counts calls.
type fakeCharts struct{ calls map[string]int }

func (f *fakeCharts) RenderChart(chart, version, release, namespace string, values map[string]any) ([]byte, error) {
	f.calls[chart+"@"+version]++
	return []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  version: %s\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers: [{name: x, image: x}]\n", chart, namespace, version, chart, namespace)), nil
}

func manifestsFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	src := strings.Replace(string(mustReadFile(t, exampleFleet)), "[charts]\n", "[charts]\nmode = \"manifests\"\n", 1)
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestManifestsMode(t *testing.T) {
	f := manifestsFleet(t)
	if _, err := Render(f); err == nil || !strings.Contains(err.Error(), "needs the operator charts") {
		t.Fatalf("manifests mode without charts: %v", err)
	}
	charts := &fakeCharts{calls: map[string]int{}}
	out, err := RenderWith(f, Options{Charts: charts})
	if err != nil {
		t.Fatal(err)
	}
	// Four clusters on one release: each chart version is rendered once per
	// distinct values (prod-a100's MIG pool sets the mixed MIG strategy).
	if charts.calls["gpu-operator@v25.3.4"] != 2 || charts.calls["network-operator@v25.4.0"] != 1 || len(charts.calls) != 2 {
		t.Errorf("chart renders: %v", charts.calls)
	}
	dir := "clusters/stg-h100/operators/"
	manifest := string(out.Files[dir+"gpu-operator-v25.3.4.yaml"])
	if !strings.HasPrefix(manifest, Header) || !strings.Contains(manifest, "namespace: gpu-operator") {
		t.Errorf("manifest:\n%s", manifest)
	}
	if _, ok := out.Files[dir+"helmrelease-gpu-operator.yaml"]; ok {
		t.Error("the manifests mode writes no HelmRelease")
	}
	fs := filesys.MakeFsInMemory()
	for p, b := range out.Files {
		if strings.HasPrefix(p, dir) {
			_ = fs.WriteFile("/"+p, b)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if rm.Size() != 2+4 {
		t.Errorf("kustomize build of the operators folder: %d objects, want 6 (2 namespaces + 2 per chart)", rm.Size())
	}
}

// TestManifestsOperatorsStepWaitsForTheOperatorsOnly: with the charts
// pre-rendered, the operators step holds the operands' DaemonSets too; it
// must be healthy when the operators' Deployments are, not hold the chain
// while one node is NotReady.
func TestManifestsOperatorsStepWaitsForTheOperatorsOnly(t *testing.T) {
	out, err := RenderWith(manifestsFleet(t), Options{Charts: &fakeCharts{calls: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	var k kustomizev1.Kustomization
	if err := yaml.Unmarshal(out.Files["clusters/stg-h100/flux-operators.yaml"], &k); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, hc := range k.Spec.HealthChecks {
		got = append(got, hc.Kind+"/"+hc.Namespace+"/"+hc.Name)
	}
	want := []string{"Deployment/gpu-operator/gpu-operator", "Deployment/nvidia-network-operator/network-operator"}
	if k.Spec.Wait || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("operators step: wait %t, health checks %v; want no wait and %v", k.Spec.Wait, got, want)
	}
}
