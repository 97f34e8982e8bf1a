package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const simStart = "--start=2026-06-01T10:00:00Z"

func TestSimulateTable(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "stg-h100", "--release", "r2026-10", simStart)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"cluster      stg-h100: 4 nodes, driver 570.172.08 → 580.95.05",
		"outcome      Completed: 4 of 4 nodes on 580.95.05",
		"nodes        4 done, 0 rolled back, 0 quarantined, 0 untouched",
		"budget       0 of 1 failures: held",
		"efficiency",
		"workload     85% of 8 GPUs a node busy: ",
		"destroyed    ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Same seed, same rehearsal.
	_, again, _ := run(t, "simulate", "-f", fleetFile, "--cluster", "stg-h100", "--release", "r2026-10", simStart)
	if diff := cmp.Diff(out, again); diff != "" {
		t.Errorf("same seed gave another result (-first +second):\n%s", diff)
	}
}

func TestSimulateDrillStopsAtCanary(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "stg-h100", "--release", "r2026-10-drill", simStart, "-v")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"outcome      Stalled: a canary node failed on 580.82.07",
		"0 done, 1 rolled back, 0 quarantined, 3 untouched",
		"Installing → RollingBack: driver 580.82.07 failed to install; rolling back to 570.172.08",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateJSONEveryCluster(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "-o", "json", simStart, "--release", "r2026-10")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var got []struct {
		Cluster string
		Report  struct {
			Outcome    string
			Nodes      int
			Done       int
			Makespan   string
			BudgetHeld bool
			Held       []struct{ Phase string }
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	type row struct {
		Cluster, Outcome string
		Nodes, Done      int
		BudgetHeld       bool
		WaitedForWindow  bool
	}
	var rows []row
	for _, g := range got {
		rows = append(rows, row{g.Cluster, g.Report.Outcome, g.Report.Nodes, g.Report.Done, g.Report.BudgetHeld,
			len(g.Report.Held) > 0 && g.Report.Held[0].Phase == "OutsideWindow"})
	}
	// Production waits for its Tue-Thu night windows; staging has none.
	want := []row{
		{"prod-a100", "Completed", 10, 10, true, true},
		{"prod-h100-a", "Completed", 8, 8, true, true},
		{"prod-h100-b", "Completed", 24, 24, true, true},
		{"stg-h100", "Completed", 4, 4, true, false},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rehearsals (-want +got):\n%s", diff)
	}
}

func TestSimulateSVG(t *testing.T) {
	fleetFile := copyExample(t)
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-a", "--release", "r2026-10", "--nodes", "12",
		"--xid-rate", "0.2", "--seed", "3", simStart, "--svg", svg)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"<svg", "gpu-11", `fill="#e8f5e9"`, "Soaking", "</svg>"} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	fleetFile := copyExample(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad output", []string{"-o", "xml"}, "-o must be table, json or yaml"},
		{"bad fail rate", []string{"--fail-rate", "2"}, "--fail-rate must be between 0 and 1"},
		{"utilization over 1", []string{"--utilization", "1.5"}, "--utilization must be between 0 and 1, got 1.5"},
		{"negative utilization", []string{"--utilization=-0.1"}, "--utilization must be between 0 and 1, got -0.1"},
		{"bad start", []string{"--start", "monday"}, "--start"},
		{"negative nodes", []string{"--nodes", "-3"}, "--nodes must be"},
		{"unknown cluster", []string{"--cluster", "nope"}, `no cluster "nope"`},
		{"unknown release", []string{"--release", "r1999"}, `no release "r1999"`},
		{"svg needs one cluster", []string{"--svg", filepath.Join(t.TempDir(), "x.svg")}, "--svg draws one cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "-f", fleetFile, simStart}, tt.args...)
			code, _, errOut := run(t, args...)
			if code != ExitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, tt.want)
			}
		})
	}
}
