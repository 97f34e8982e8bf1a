package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// TestStatusLiveAdoption: `status --live` shows, per cluster, who runs its
// GPU driver (by the fleet file, and by its ClusterPolicy where that
// differs) and how many GPU nodes are under gpufleet of how many: held on
// the gpu-operator actuator, labelled on gpufleet's. The document follows
// the schema and equals its golden file (-update rewrites it); the table
// has the ADOPTION column.
func TestStatusLiveAdoption(t *testing.T) {
	f, err := fleet.Load("../render/testdata/adopted/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := promote.StatusOf(f)
	st.AddGate(&gate.Report{
		Checks: []gate.Check{
			{Cluster: "cp", Name: gate.PoolHeldCheck("h100"), Status: gate.Fail, Observed: "3 of 4"},
			{Cluster: "cp", Name: gate.RolloutCheck("r1"), Status: gate.Pass, Observed: "Completed, 4/4 done, budget used 0 of 1"},
			{Cluster: "nd", Name: gate.DriverManagementCheck(), Status: gate.Fail, Observed: fleet.DriverManagementClusterPolicy},
			{Cluster: "nd", Name: gate.PoolDriverLabelCheck("a100"), Status: gate.Fail, Observed: "1 of 4"},
			{Cluster: "nd", Name: gate.RolloutCheck("r1"), Status: gate.Pass, Observed: "Completed, 4/4 done, budget used 0 of 1"},
		},
		Adoption: map[string]gate.Adoption{
			"cp": {DriverManagement: fleet.DriverManagementClusterPolicy, LiveDriverManagement: fleet.DriverManagementClusterPolicy, By: gate.AdoptedHeld, Under: 3, Nodes: 4},
			"nd": {DriverManagement: fleet.DriverManagementNVIDIADriver, LiveDriverManagement: fleet.DriverManagementClusterPolicy, By: gate.AdoptedLabelled, Under: 1, Nodes: 4},
		},
	})
	var doc bytes.Buffer
	if err := writeDocument(&doc, formatJSON, st); err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "Status", doc.Bytes())
	golden := filepath.Join("testdata", "golden", "status-live.json")
	if *updateGolden {
		if err := os.WriteFile(golden, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if doc.String() != string(want) {
		t.Errorf("status --live -o json differs from %s (-update rewrites it):\n%s", golden, doc.String())
	}
	var table bytes.Buffer
	printStatus(&table, st)
	for _, want := range []string{"ADOPTION", "clusterpolicy, 3/4 held", "nvidiadriver (cluster: clusterpolicy), 1/4 labelled", "fail (gpu-operator/driver-management, nodes/a100/driver-label)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}
