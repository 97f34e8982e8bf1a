package cli

import (
	"strings"
	"testing"
)

// TestDemoCommandLine checks the demo command's wiring without starting the
// testbed (the story itself is the end-to-end suite's, test/e2e).
func TestDemoCommandLine(t *testing.T) {
	code, out, _ := run(t, "demo", "--help")
	if code != ExitOK || !strings.Contains(out, "--keep") || !strings.Contains(out, "Ctrl-C") {
		t.Errorf("demo --help: exit %d, output %q", code, out)
	}
	if code, _, _ := run(t, "demo", "extra"); code != ExitUsage {
		t.Errorf("demo with an argument: exit %d, want %d", code, ExitUsage)
	}
	if code, _, _ := run(t, "demo", "--no-such-flag"); code != ExitUsage {
		t.Errorf("demo with an unknown flag: exit %d, want %d", code, ExitUsage)
	}
	// Without the operator data next to the root it cannot start: exit 3.
	if code, _, errOut := run(t, "demo", "--root", t.TempDir()); code != ExitUnknown || !strings.Contains(errOut, "operators") {
		t.Errorf("demo without the operator data: exit %d, stderr %q; want %d naming what is missing", code, errOut, ExitUnknown)
	}
}
