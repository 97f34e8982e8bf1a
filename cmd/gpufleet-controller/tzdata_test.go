package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// windowZones are zones maintenance windows name in the examples and tests.
var windowZones = []string{"Europe/Berlin", "America/New_York", "Asia/Kolkata"}

// TestZonesWithoutTheMachinesDatabase runs the controller's code (this test
// binary links what main imports) with ZONEINFO pointing at an empty folder
// and checks every window zone still loads. On a host without a system zone
// database (the controller's distroless image) only the embedded
// time/tzdata can answer; TestControllerLinksTZData covers hosts that have
// one, where the time package would fall back to it.
func TestZonesWithoutTheMachinesDatabase(t *testing.T) {
	if os.Getenv("GPUFLEET_TZ_CHILD") == "1" {
		for _, z := range windowZones {
			if _, err := time.LoadLocation(z); err != nil {
				t.Fatalf("load %s: %v", z, err)
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZonesWithoutTheMachinesDatabase$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPUFLEET_TZ_CHILD=1", "ZONEINFO="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with an empty ZONEINFO: %v\n%s", err, out)
	}
}

// TestControllerLinksTZData: the controller binary embeds the zone
// database, whatever the machine has.
func TestControllerLinksTZData(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !strings.Contains("\n"+string(out), "\ntime/tzdata\n") {
		t.Error("the controller does not link time/tzdata: windows would depend on the machine's zone database")
	}
}
