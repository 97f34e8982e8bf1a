package charts

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

func exampleFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReleaseSpecs: one spec per release in the fleet file's order, each
// with its charts at its versions and only the NVIDIA and Mellanox objects
// render writes for clusters on it, among them each pool's NVIDIADriver of
// the release's driver, named by the file they are written to.
func TestReleaseSpecs(t *testing.T) {
	f := exampleFleet(t)
	files, err := render.EveryRelease(f, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ReleaseSpecs(f, files)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, f.ReleaseNames()) {
		t.Fatalf("specs for %v, want %v", names, f.ReleaseNames())
	}
	for _, s := range specs {
		rel := f.Releases[s.Name]
		if len(s.Charts) == 0 || s.Charts[0].Name != "gpu-operator" || s.Charts[0].Version != rel.GPUOperator || s.Charts[0].Values == nil {
			t.Errorf("%s: charts %+v, want gpu-operator %s with gpufleet's values first", s.Name, s.Charts, rel.GPUOperator)
		}
		want := "nvidiadriver-h100-" + strings.ReplaceAll(rel.Driver, ".", "-") + ".yaml"
		found := false
		for _, o := range s.Objects {
			if g := o.Object.GroupVersionKind().Group; g != "nvidia.com" && g != "mellanox.com" {
				t.Errorf("%s: object of group %q from %s is not checked against the charts' CRDs", s.Name, g, o.Origin)
			}
			found = found || o.Object.GetKind() == "NVIDIADriver" && strings.Contains(o.Origin, want)
		}
		if !found {
			t.Errorf("%s: no NVIDIADriver from a file %s among %d objects", s.Name, want, len(s.Objects))
		}
	}
}

// TestFleetCheckCouldNotCheck: charts the source lacks are failures in the
// report (validate's exit 3), not an error of the run.
func TestFleetCheckCouldNotCheck(t *testing.T) {
	f := exampleFleet(t)
	src, err := NewSource(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := FleetCheck{Fleet: f, Source: src, KubeVersion: DefaultKubeVersion}.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0].Error, "chart not found") {
		t.Errorf("failures %+v, want chart not found", rep.Failures)
	}
}
