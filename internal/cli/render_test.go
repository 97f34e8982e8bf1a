package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes a gpufleet command line and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func copyExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRenderThenCheck(t *testing.T) {
	fleetFile := copyExample(t)
	code, _, errOut := run(t, "render", "--check", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(errOut, "not up to date") {
		t.Fatalf("--check before any render: exit %d, stderr %q; want 1 and a hint", code, errOut)
	}
	code, out, errOut := run(t, "render", "-v", "-f", fleetFile)
	if code != ExitOK || !strings.Contains(out, "added    clusters/stg-h100/flux-operators.yaml") {
		t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "render", "--check", "-f", fleetFile, "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"upToDate": true`) {
		t.Fatalf("--check after render: exit %d, %s", code, out)
	}
	// Changing the fleet file makes the output stale; --check lists the files.
	src, _ := os.ReadFile(fleetFile)
	if err := os.WriteFile(fleetFile, bytes.Replace(src, []byte(`nodes = 4`), []byte(`nodes = 5`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fleetFile, bytes.Replace(src, []byte(`stable = "r2026-06"`), []byte("stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "render", "--check", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(out, "add      clusters/stg-h100/config/nvidiadriver-h100-580-95-05.yaml") || !strings.Contains(out, "change   clusters/stg-h100/operators/helmrelease-gpu-operator.yaml") {
		t.Errorf("--check after a rollout started: exit %d\n%s", code, out)
	}
}

func TestRenderBadFleetFile(t *testing.T) {
	fleetFile := copyExample(t)
	src, _ := os.ReadFile(fleetFile)
	bad := bytes.Replace(src, []byte(`nodes = 4`), []byte("nodes = 4\nnodeSelecter = \"gpu\""), 1)
	bad = bytes.Replace(bad, []byte(`canary = "prod-h100-a"`), []byte(`canary = "prod-h100-c"`), 1)
	if err := os.WriteFile(fleetFile, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "render", "-f", fleetFile)
	if code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	for _, want := range []string{
		"2 problem(s) in the fleet file",
		"fleet.toml:46:1: clusters.stg-h100.pools[0].nodeSelecter: unknown key",
		`waves[1].canary: canary "prod-h100-c" is not one of the wave's clusters`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(fleetFile), "clusters")); !os.IsNotExist(err) {
		t.Errorf("a failed render must write nothing")
	}
}

func TestExitCodes(t *testing.T) {
	if code, _, _ := run(t, "render", "--no-such-flag"); code != ExitUsage {
		t.Errorf("unknown flag: exit %d, want %d", code, ExitUsage)
	}
	if code, _, _ := run(t, "no-such-command"); code != ExitUsage {
		t.Errorf("unknown command: exit %d, want %d", code, ExitUsage)
	}
	if code, _, errOut := run(t, "render", "-f", filepath.Join(t.TempDir(), "missing.toml")); code != ExitUnknown || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing fleet file: exit %d (%s), want %d", code, errOut, ExitUnknown)
	}
}

// TestRenderManifestsWithRealCharts renders the example with the operator
// charts pre-rendered from the real charts in ../shared/operators.
func TestRenderManifestsWithRealCharts(t *testing.T) {
	const shared = "../../../shared/operators"
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("needs the real operator charts in ../shared/operators (absent here): %v", err)
	}
	fleetFile := copyExample(t)
	src, _ := os.ReadFile(fleetFile)
	if err := os.WriteFile(fleetFile, bytes.Replace(src, []byte("[charts]\n"), []byte("[charts]\nmode = \"manifests\"\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "render", "-f", fleetFile, "--charts", shared); code != ExitOK {
		t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(fleetFile), "clusters/stg-h100/operators/gpu-operator-v25.3.4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: CustomResourceDefinition", "name: nvidiadrivers.nvidia.com", "kind: Deployment", "name: gpu-operator", "kind: ClusterPolicy"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the pre-rendered GPU Operator lacks %q", want)
		}
	}
	if code, out, _ := run(t, "render", "--check", "-f", fleetFile, "--charts", shared); code != ExitOK {
		t.Errorf("a second render must be byte-identical: exit %d\n%s", code, out)
	}
}
