package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestEveryReleaseRendersEachClusterOnEachRelease checks what validate is
// given: every release as each cluster would run it, also the one no
// cluster runs yet, with both drivers while it rolls out from another.
func TestEveryReleaseRendersEachClusterOnEachRelease(t *testing.T) {
	f, err := fleet.Load(exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	files, err := EveryRelease(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, rf := range files {
		if strings.HasPrefix(rf.Path, "clusters/prod-a100/config/nvidiadriver-") {
			got[rf.Release] = append(got[rf.Release], strings.TrimPrefix(rf.Path, "clusters/prod-a100/config/")+" "+rf.As)
		}
	}
	for r := range got {
		slices.Sort(got[r])
	}
	// No cluster runs r2026-10-drill (or r2026-10) in the fleet file, yet
	// their objects are there: alone, and beside each other release's driver.
	want := map[string][]string{
		"r2026-06": {
			"nvidiadriver-a100-570-172-08.yaml ",
			"nvidiadriver-a100-580-82-07.yaml r2026-06 rolling out from r2026-10-drill",
			"nvidiadriver-a100-580-95-05.yaml r2026-06 rolling out from r2026-10",
			"nvidiadriver-a100-mig-570-172-08.yaml ",
			"nvidiadriver-a100-mig-580-82-07.yaml r2026-06 rolling out from r2026-10-drill",
			"nvidiadriver-a100-mig-580-95-05.yaml r2026-06 rolling out from r2026-10",
		},
		"r2026-10": {
			"nvidiadriver-a100-570-172-08.yaml r2026-10 rolling out from r2026-06",
			"nvidiadriver-a100-580-82-07.yaml r2026-10 rolling out from r2026-10-drill",
			"nvidiadriver-a100-580-95-05.yaml ",
			"nvidiadriver-a100-mig-570-172-08.yaml r2026-10 rolling out from r2026-06",
			"nvidiadriver-a100-mig-580-82-07.yaml r2026-10 rolling out from r2026-10-drill",
			"nvidiadriver-a100-mig-580-95-05.yaml ",
		},
		"r2026-10-drill": {
			"nvidiadriver-a100-570-172-08.yaml r2026-10-drill rolling out from r2026-06",
			"nvidiadriver-a100-580-82-07.yaml ",
			"nvidiadriver-a100-580-95-05.yaml r2026-10-drill rolling out from r2026-10",
			"nvidiadriver-a100-mig-570-172-08.yaml r2026-10-drill rolling out from r2026-06",
			"nvidiadriver-a100-mig-580-82-07.yaml ",
			"nvidiadriver-a100-mig-580-95-05.yaml r2026-10-drill rolling out from r2026-10",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NVIDIADrivers of prod-a100 per release (-want +got):\n%s", diff)
	}
}

// TestEveryReleaseRendersEachChartOnce: in the manifests mode the renders
// share one chart cache, so each chart version is rendered once per
// distinct values however many promotion states are rendered.
func TestEveryReleaseRendersEachChartOnce(t *testing.T) {
	charts := &fakeCharts{calls: map[string]int{}}
	if _, err := EveryRelease(manifestsFleet(t), Options{Charts: charts}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"gpu-operator@v25.3.4": 2, "gpu-operator@v25.10.1": 2, "network-operator@v25.4.0": 1, "network-operator@v25.10.0": 1}
	if diff := cmp.Diff(want, charts.calls); diff != "" {
		t.Errorf("chart renders (-want +got):\n%s", diff)
	}
}
