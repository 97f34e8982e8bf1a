package cli

import (
	"os"
	"strings"
	"testing"
)

// editExample copies the example fleet file with each old string replaced.
func editExample(t *testing.T, oldNew ...string) string {
	t.Helper()
	path := copyExample(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("example lacks %q", oldNew[i])
		}
		s = strings.Replace(s, oldNew[i], oldNew[i+1], 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimulateDefaultsToTheReleaseBeingRolledOut is the first class of
// issue 18: without --release, simulate rehearsed the stable release onto
// itself. It rehearses the release being rolled out, and with none it
// refuses and says what to pass.
func TestSimulateDefaultsToTheReleaseBeingRolledOut(t *testing.T) {
	idle := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", idle, "--cluster", "stg-h100", simStart)
	if code != ExitUsage || !strings.Contains(errOut, "no release is being rolled out: pass --release (one of r2026-10, r2026-10-drill)") {
		t.Errorf("no rollout: exit %d, stderr %q, stdout %q; want exit %d naming the releases to pass", code, errOut, out, ExitUsage)
	}
	rolling := editExample(t, `stable = "r2026-06"`, `stable = "r2026-06"
rollout = { release = "r2026-10", wave = "staging" }`)
	code, out, errOut = run(t, "simulate", "-f", rolling, "--cluster", "stg-h100", simStart)
	if code != ExitOK || !strings.Contains(out, "driver 570.172.08 → 580.95.05") || !strings.Contains(out, "4 done") {
		t.Errorf("rollout of r2026-10: exit %d, want it rehearsed:\n%s%s", code, out, errOut)
	}
}

// TestSimulateFreezeIsANamedHoldThatEnds is the second class of issue 18:
// inside a freeze longer than the planner's look-ahead the rehearsal ended
// at once ("held never", exit 0), and a freeze that held a rollout was
// reported as OutsideWindow. A freeze is a hold of its own, named, and the
// rollout waits for its end.
func TestSimulateFreezeIsANamedHoldThatEnds(t *testing.T) {
	fleetFile := editExample(t, `[policy.environments.staging]
`, `[policy.environments.staging]
freezes = [{ start = 2026-06-01T00:00:00Z, end = 2026-07-01T00:00:00Z, reason = "summer freeze" }]
`)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "stg-h100", "--release", "r2026-10", simStart)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"outcome      Completed: 4 of 4 nodes on 580.95.05",
		"Frozen (summer freeze) Mon 2026-06-01 10:00 UTC → Wed 2026-07-01 00:00 UTC",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Production's year-end freeze, then its next night window.
	code, out, errOut = run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-a", "--release", "r2026-10", "--start=2026-12-22T10:00:00Z")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "Frozen (year-end change freeze) Tue 2026-12-22 10:00 UTC → Mon 2027-01-04 00:00 UTC") ||
		!strings.Contains(out, "OutsideWindow Mon 2027-01-04 00:00 UTC → Tue 2027-01-05 21:00 UTC") {
		t.Errorf("want the freeze as a named hold, then the wait for the window:\n%s", out)
	}
}
