package lab

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/cli"
)

// run executes one gpufleet-lab command line and returns its exit code and
// outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestDemoCommandLine checks the demo command's wiring without starting the
// testbed (the story itself is the end-to-end suite's, test/e2e).
func TestDemoCommandLine(t *testing.T) {
	code, out, _ := run(t, "demo", "--help")
	if code != cli.ExitOK || !strings.Contains(out, "--keep") || !strings.Contains(out, "--report") || !strings.Contains(out, "Ctrl-C") {
		t.Errorf("demo --help: exit %d, output %q", code, out)
	}
	if code, _, _ := run(t, "demo", "extra"); code != cli.ExitUsage {
		t.Errorf("demo with an argument: exit %d, want %d", code, cli.ExitUsage)
	}
	if code, _, _ := run(t, "demo", "--no-such-flag"); code != cli.ExitUsage {
		t.Errorf("demo with an unknown flag: exit %d, want %d", code, cli.ExitUsage)
	}
	if code, _, _ := run(t, "no-such-verb"); code != cli.ExitUsage {
		t.Errorf("an unknown command: exit %d, want %d", code, cli.ExitUsage)
	}
	// Without the operator data next to the root it cannot start: exit 3.
	if code, _, errOut := run(t, "demo", "--root", t.TempDir()); code != cli.ExitUnknown || !strings.Contains(errOut, "operators") {
		t.Errorf("demo without the operator data: exit %d, stderr %q; want %d naming what is missing", code, errOut, cli.ExitUnknown)
	}
}
