package charts

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

func findingLines(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Release+" "+f.Chart+" "+f.Version+" "+f.Object()+": "+f.Message())
	}
	return out
}

func TestCheckerFixture(t *testing.T) {
	objs, err := crdcheck.DecodeObjects([]byte(`apiVersion: example.gpufleet.io/v1
kind: Widget
metadata: {name: extra, namespace: tools}
spec: {size: 1, mode: slow, colr: red}
---
apiVersion: example.gpufleet.io/v1
kind: Sprocket
metadata: {name: s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: builtin}
`))
	if err != nil {
		t.Fatal(err)
	}
	var extra []ExtraObject
	for _, o := range objs {
		extra = append(extra, ExtraObject{Origin: "clusters/a/config/extra.yaml", Object: o})
	}
	c := &Checker{Source: &FolderSource{Dir: fixtures}}
	r := c.Check(context.Background(), []ReleaseSpec{
		{Name: "old", Charts: []ChartSpec{{Name: "widget", Version: "1.0.0", Values: map[string]any{
			"mode": "medium", "extra": map[string]any{"color": "blue"}, "gadget": map[string]any{"enabled": true},
		}}}, Objects: extra},
		{Name: "new", Charts: []ChartSpec{{Name: "widget", Version: "2.0.0", Values: map[string]any{"extra": map[string]any{"color": "blue"}}}}},
		// Objects whose kind only the missing chart could define are not
		// reported as lacking a CRD.
		{Name: "missing", Charts: []ChartSpec{{Name: "widget", Version: "3.0.0"}}, Objects: extra},
	})
	want := []string{
		"old widget 1.0.0 Widget/widget/widget: spec.color: unknown field (exists in widget 2.0.0)",
		`old widget 1.0.0 Widget/widget/widget: spec.mode: Unsupported value: "medium": supported values: "fast", "slow"`,
		"old widget 1.0.0 Widget/tools/extra: spec.colr: unknown field",
		"old widget 1.0.0 Sprocket/s: no CustomResourceDefinition for kind Sprocket in group example.gpufleet.io",
	}
	if diff := cmp.Diff(want, findingLines(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	wantFail := []Failure{{Release: "missing", Chart: "widget", Version: "3.0.0",
		Error: "chart not found: widget 3.0.0 in testdata/charts (no folder widget/3.0.0, no widget-3.0.0.tgz; accepted layouts: " + FolderLayouts + ")"}}
	if diff := cmp.Diff(wantFail, r.Failures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if r.Objects != 5 {
		t.Errorf("checked %d custom resources, want 5", r.Objects)
	}
}

// operatorsDir finds the shared operator charts next to the repository
// (../shared/operators from the directory holding go.mod), or skips.
func operatorsDir(t testing.TB) string { return sharedtest.Operators(t) }

// gpufleetValues mirror what render gives the charts (render.GPUOperatorValues
// and render.NetworkOperatorValues); the cli test checks the real ones.
func gpuOperatorValues() map[string]any {
	return map[string]any{"driver": map[string]any{
		"enabled":         true,
		"nvidiaDriverCRD": map[string]any{"enabled": true, "deployDefaultCR": false},
		"upgradePolicy":   map[string]any{"autoUpgrade": false},
	}}
}

func networkOperatorValues() map[string]any {
	return map[string]any{"nfd": map[string]any{"enabled": false}}
}

var (
	gpuOperatorVersions     = []string{"v24.6.2", "v24.9.2", "v25.3.4", "v25.10.1", "v26.7.0"}
	networkOperatorVersions = []string{"v25.4.0", "v25.10.0", "v26.4.1"}
)

// realReleases pairs every GPU Operator version with a Network Operator one,
// so that one run covers every version of both charts.
func realReleases() []ReleaseSpec {
	var out []ReleaseSpec
	for i, g := range gpuOperatorVersions {
		n := networkOperatorVersions[i%len(networkOperatorVersions)]
		out = append(out, ReleaseSpec{Name: g, Charts: []ChartSpec{
			{Name: "gpu-operator", Version: g, Values: gpuOperatorValues()},
			{Name: "network-operator", Version: n, Values: networkOperatorValues()},
		}})
	}
	return out
}

func TestRealChartsValidateClean(t *testing.T) {
	ops := operatorsDir(t)
	c := &Checker{Source: &FolderSource{Dir: ops}}
	r := c.Check(context.Background(), realReleases())
	if diff := cmp.Diff([]string(nil), findingLines(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(r.Failures) > 0 {
		t.Errorf("failures: %+v", r.Failures)
	}
	if r.Objects == 0 {
		t.Error("no custom resources checked")
	}
	t.Logf("checked %d custom resources; notes: %q", r.Objects, r.Notes)
}

func TestRealChartsUnknownFieldHint(t *testing.T) {
	ops := operatorsDir(t)
	objs, err := crdcheck.DecodeObjects([]byte(`apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: h100-580-95-05}
spec:
  driverType: gpu
  image: driver
  repository: nvcr.io/nvidia
  version: "580.95.05"
  nodeSelecter: {gpufleet.io/driver: "580.95.05"}
  upgradePolicy: {autoUpgrade: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{Source: &FolderSource{Dir: ops}}
	r := c.Check(context.Background(), []ReleaseSpec{{
		Name: "r1",
		Charts: []ChartSpec{
			{Name: "gpu-operator", Version: "v25.10.1", Values: gpuOperatorValues()},
			{Name: "network-operator", Version: "v25.10.0", Values: networkOperatorValues()},
		},
		Objects: []ExtraObject{{Origin: "clusters/a/config/nvidiadriver-h100.yaml", Object: objs[0]}},
	}})
	want := []string{
		"r1 gpu-operator v25.10.1 NVIDIADriver/h100-580-95-05: spec.nodeSelecter: unknown field",
		"r1 gpu-operator v25.10.1 NVIDIADriver/h100-580-95-05: spec.upgradePolicy: unknown field (exists in gpu-operator v26.7.0)",
	}
	if diff := cmp.Diff(want, findingLines(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// BenchmarkCheckAllVersions renders and validates every version of both
// operator charts, as one validate run over a fleet with all of them.
func BenchmarkCheckAllVersions(b *testing.B) {
	ops := operatorsDir(b)
	for b.Loop() {
		c := &Checker{Source: &FolderSource{Dir: ops}}
		r := c.Check(context.Background(), realReleases())
		if len(r.Findings)+len(r.Failures) > 0 {
			b.Fatalf("findings %v failures %v", findingLines(r), r.Failures)
		}
	}
}

// TestRealManifests renders the real GPU Operator chart, which says
// v1.0.0-devel at its git tag, to plain manifests: images must carry the
// release's tag, hooks must be left out and the output must be stable.
func TestRealManifests(t *testing.T) {
	ops := operatorsDir(t)
	src := &FolderSource{Dir: ops}
	ctx := context.Background()
	objs, err := ManifestObjects(ctx, src, "gpu-operator", "v26.7.0", gpuOperatorValues(), RenderOptions{Namespace: "gpu-operator"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetAnnotations()["helm.sh/hook"] != "" {
			t.Errorf("hook %s/%s in the manifests", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "Deployment" && o.GetName() == "gpu-operator" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if img := containers[0].(map[string]any)["image"]; img != "nvcr.io/nvidia/gpu-operator:v26.7.0" {
				t.Errorf("operator image %v, want the release's tag", img)
			}
			if o.GetNamespace() != "gpu-operator" {
				t.Errorf("operator namespace %q", o.GetNamespace())
			}
		}
	}
	if kinds["CustomResourceDefinition"] == 0 || kinds["ClusterPolicy"] != 1 {
		t.Errorf("kinds %v: want the CRDs and one ClusterPolicy", kinds)
	}
	a, err := EncodeYAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RenderManifests(ctx, src, "gpu-operator", "v26.7.0", gpuOperatorValues(), RenderOptions{Namespace: "gpu-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("two renders of the same chart and values differ")
	}
}

// TestRendererReleaseName: Renderer renders a chart as the Helm release it
// is given, in its namespace: an adopted Network Operator installed as
// net-op runs its Deployment as net-op-network-operator (the chart's
// fullname), and a release whose name holds the chart's keeps it alone.
func TestRendererReleaseName(t *testing.T) {
	ops := operatorsDir(t)
	r := Renderer{Ctx: context.Background(), Src: &FolderSource{Dir: ops}}
	for release, want := range map[string]string{
		"net-op":                      "net-op-network-operator",
		"network-operator":            "network-operator",
		"network-operator-1712345678": "network-operator-1712345678",
	} {
		b, err := r.RenderChart("network-operator", "v25.4.0", release, "nvidia-net", map[string]any{"nfd": map[string]any{"enabled": false}})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := crdcheck.DecodeObjects(b)
		if err != nil {
			t.Fatal(err)
		}
		var deployments []string
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				deployments = append(deployments, o.GetNamespace()+"/"+o.GetName())
			}
		}
		if len(deployments) != 1 || deployments[0] != "nvidia-net/"+want {
			t.Errorf("release %s: Deployments %v, want nvidia-net/%s", release, deployments, want)
		}
	}
}
