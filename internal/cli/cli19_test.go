package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVersion: `version` says the version, commit and Go version the build
// recorded and the fleet file's operator versions; --version is one line.
func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version", "-f", "../../examples/fleet.toml", "-o", "json")
	var v VersionInfo
	if code != ExitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || len(v.Releases) != 3 || v.Releases[0] != (ReleaseVersions{Release: "r2026-06", GPUOperator: "v25.3.4", NetworkOperator: "v25.4.0", Driver: "570.172.08"}) {
		t.Errorf("version %+v", v)
	}
	code, out, _ = run(t, "--version")
	if code != ExitOK || !strings.HasPrefix(out, "gpufleet "+v.Version) || strings.Count(out, "\n") != 1 || !strings.Contains(out, v.GoVersion) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	// Without a fleet file version still works.
	if code, out, errOut := run(t, "version", "-f", filepath.Join(t.TempDir(), "none.toml")); code != ExitOK || !strings.Contains(out, "go:") || strings.Contains(out, "releases") {
		t.Errorf("version without a fleet file: exit %d\n%s%s", code, out, errOut)
	}
}

// TestRenderSpellings: -o is the output format as in kubectl, and the older
// spellings still work, each saying so on stderr: --format for -o, and -o
// DIR for --output-dir. The output ends with one summary line; -v lists.
func TestRenderSpellings(t *testing.T) {
	fleetFile := copyExample(t)
	out1 := filepath.Join(t.TempDir(), "out")
	code, out, errOut := run(t, "render", "-f", fleetFile, "-o", out1)
	if code != ExitOK || !strings.Contains(errOut, "-o DIR is deprecated") || !strings.Contains(errOut, "--output-dir "+out1) {
		t.Fatalf("render -o DIR: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(out1, "clusters", "stg-h100", "flux-operators.yaml")); err != nil {
		t.Errorf("-o DIR did not write into DIR: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "rendered: 178 file(s) (shared (apps/, infrastructure/): 76 added; prod-a100: 26 added;") || !strings.HasSuffix(lines[0], "; -v lists them") {
		t.Errorf("render's summary: %q", out)
	}
	code, out, errOut = run(t, "render", "-f", fleetFile, "--output-dir", out1, "--check", "--format", "json")
	if code != ExitOK || !strings.Contains(errOut, "--format is deprecated: use -o json") || !strings.Contains(out, `"upToDate": true`) {
		t.Errorf("--format json: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "render", "-f", fleetFile, "--format", "json", "-o", "yaml")
	if code != ExitUsage || !strings.Contains(out, "disagree") || !strings.Contains(out, "kind: Error") {
		t.Errorf("--format and -o that disagree: exit %d, %s", code, out)
	}
	// A stale output: --check shows each changed object's unified diff.
	src, _ := os.ReadFile(fleetFile)
	stale := strings.Replace(string(src), `stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }", 1)
	if err := os.WriteFile(fleetFile, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "render", "-f", fleetFile, "--output-dir", out1, "--check")
	for _, want := range []string{
		"change   clusters/stg-h100/operators/helmrelease-gpu-operator.yaml",
		"~ HelmRelease gpu-operator/gpu-operator\n--- a/clusters/stg-h100/operators/helmrelease-gpu-operator.yaml\n+++ b/clusters/stg-h100/operators/helmrelease-gpu-operator.yaml\n",
		"-      version: v25.3.4\n+      version: v25.10.1\n",
		"-  targetVersion: 570.172.08\n+  targetVersion: 580.95.05\n",
		"not up to date: 6 file(s) (stg-h100: 1 add, 5 change)", // the NicClusterPolicy takes the new OFED driver
	} {
		if code != ExitFailed || !strings.Contains(out, want) {
			t.Errorf("render --check of a stale output: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}

// TestMachineErrors: with -o json or yaml the error is a document on
// stdout, nothing on stderr, and the exit code is the one without -o.
func TestMachineErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"gate", "-o", "json"}, ExitUsage},
		{[]string{"status", "--watch", "-o", "json"}, ExitUsage},
		{[]string{"explain", "nope", "-f", "../../examples/fleet.toml", "-o", "yaml"}, ExitUsage},
		{[]string{"status", "-f", filepath.Join(t.TempDir(), "missing.toml"), "-o", "json"}, ExitUnknown},
	} {
		code, out, errOut := run(t, tt.args...)
		if code != tt.code || errOut != "" || !strings.Contains(out, "kind: Error") && !strings.Contains(out, `"kind": "Error"`) || !strings.Contains(out, "exitCode") {
			t.Errorf("gpufleet %s: exit %d (want %d)\nstdout %s\nstderr %s", strings.Join(tt.args, " "), code, tt.code, out, errOut)
		}
	}
	// Without -o the same error goes to stderr as before.
	if code, out, errOut := run(t, "gate"); code != ExitUsage || out != "" || !strings.HasPrefix(errOut, "gpufleet: give --wave or --cluster") {
		t.Errorf("gate without -o: exit %d, %q, %q", code, out, errOut)
	}
}

// TestStatusWatch looks again every --interval until Ctrl-C (the context
// ends), which is a normal end; a cluster that cannot be read is said on
// each look, not the end of the watch.
func TestStatusWatch(t *testing.T) {
	fleetFile := copyExample(t)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "--allow-empty", "-m", "fleet"}} {
		if out, err := exec.Command("git", append([]string{"-C", filepath.Dir(fleetFile)}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Run(ctx, []string{"status", "--live", "--watch", "--interval", "300ms", "-f", fleetFile, "--kubeconfig", kubeconfig}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if looks := strings.Count(out.String(), "stable: r2026-06"); looks < 2 {
		t.Errorf("%d looks in 1.2s at a 300ms interval:\n%s", looks, out.String())
	}
	if !strings.Contains(out.String(), "(incomplete: could not read the live state of prod-a100, prod-h100-a, prod-h100-b, stg-h100)") {
		t.Errorf("the unreadable clusters are not said:\n%s", out.String())
	}
}

// TestProgress: on a terminal each step rewrites one line and the end
// clears it; elsewhere nothing is written. A step seen before is not
// counted again.
func TestProgress(t *testing.T) {
	var quiet bytes.Buffer
	p := newProgress(&quiet, 2)
	p.step("a", "loading a")
	p.done()
	if quiet.Len() != 0 {
		t.Errorf("not on a terminal, progress wrote %q", quiet.String())
	}
	var tty bytes.Buffer
	p = &progress{w: &tty, tty: true, total: 2, seen: map[string]bool{}}
	p.step("a", "loading a")
	p.step("a", "loading a")
	p.step("b", "loading b")
	p.done()
	if want := "\r\x1b[K[1/2] loading a\r\x1b[K[2/2] loading b\r\x1b[K"; tty.String() != want {
		t.Errorf("on a terminal: %q, want %q", tty.String(), want)
	}
}
