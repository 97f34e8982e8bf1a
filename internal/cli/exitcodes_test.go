package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallFleet is a valid fleet file of two clusters, for command-line tests
// that need one but not the example's serving stack.
const smallFleet = `[releases.r1]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "570.172.08"

[releases.r2]
gpu-operator = "v25.10.1"
network-operator = "v25.10.0"
driver = "580.95.05"

[clusters.stg]
environment = "staging"

[[clusters.stg.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4

[clusters.prod]
environment = "prod"

[[clusters.prod.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 8

[[waves]]
name = "staging"
clusters = ["stg"]

[[waves]]
name = "production"
clusters = ["prod"]

[promotion]
stable = "r1"
`

// gitFleet writes src as fleet.toml in a new git repository with one commit
// of it and returns the file's path.
func gitFleet(t *testing.T, src string) string {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "fleet"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return path
}

// TestExitCodeClasses holds each command to the exit-code contract: 2 for a
// wrong command line, whatever check found it; 1 for a refusal, including
// a fleet file with uncommitted edits; 3 when the live state could not be
// read, as for status --live with no reachable cluster.
func TestExitCodeClasses(t *testing.T) {
	fleetFile := gitFleet(t, smallFleet)
	noClusters := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(noClusters, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		// stderr must contain this.
		says string
	}{
		{"skip-gate without reason", []string{"promote", "--skip-gate", "-f", fleetFile}, ExitUsage, "--skip-gate needs --reason"},
		{"skip-gate with a blank reason", []string{"promote", "--skip-gate", "--reason", "  ", "-f", fleetFile}, ExitUsage, "--skip-gate needs --reason"},
		{"reason without skip-gate", []string{"promote", "--reason", "hurry", "-f", fleetFile}, ExitUsage, "--reason goes with --skip-gate"},
		{"plan with no command", []string{"plan", "-f", fleetFile}, ExitUsage, "requires at least 1 arg(s)"},
		{"plan of an unknown command", []string{"plan", "deploy", "-f", fleetFile}, ExitUsage, `unknown command "deploy"`},
		{"start with no release", []string{"start", "-f", fleetFile}, ExitUsage, "accepts 1 arg(s)"},
		{"approve with two names", []string{"approve", "r2/staging", "r2/prod", "-f", fleetFile}, ExitUsage, "accepts 1 arg(s)"},
		{"lint with two folders", []string{"lint", "a", "b"}, ExitUsage, "accepts at most 1 arg(s)"},
		{"status with a bad output", []string{"status", "-o", "xml", "-f", fleetFile}, ExitUsage, "-o must be table, json or yaml"},
		{"status --live, no reachable cluster", []string{"status", "--live", "--kubeconfig", noClusters, "--timeout", "2s", "-f", fleetFile}, ExitUnknown, "could not read the live state of prod, stg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.says) {
				t.Errorf("gpufleet %s: exit %d, stderr %q; want exit %d saying %q\n%s", strings.Join(tt.args, " "), code, errOut, tt.code, tt.says, out)
			}
		})
	}

	// status --live prints what it could before exiting 3.
	if _, out, _ := run(t, "status", "--live", "--kubeconfig", noClusters, "--timeout", "2s", "-f", fleetFile); !strings.Contains(out, "GATE") || !strings.Contains(out, "unknown (connect)") {
		t.Errorf("status --live with no reachable cluster still prints the table:\n%s", out)
	}

	// A dirty fleet.toml is a refusal (1), not "could not check" (3).
	if err := os.WriteFile(fleetFile, []byte(smallFleet+"# an edit not committed yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "start", "r2", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(errOut, "fleet.toml has uncommitted changes") {
		t.Errorf("start over a dirty fleet.toml: exit %d, stderr %q; want %d", code, errOut, ExitFailed)
	}
}
