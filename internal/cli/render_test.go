package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
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
		"fleet.toml:52:1: clusters.stg-h100.pools[0].nodeSelecter: unknown key",
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

// TestRenderRefusesUnsafeDriverManagementSwitch: render, render --check and
// render -o json refuse, exit 1, a fleet file that switches a cluster's GPU
// Operator from ClusterPolicy to NVIDIADriver driver management below
// v26.7.0 against what the output folder holds, and write nothing; with -o
// json the refusal is an error document. A first render of clusters that
// would run NVIDIADriver management below v26.7.0 without an adopted
// install warns once on stderr, naming them.
func TestRenderRefusesUnsafeDriverManagementSwitch(t *testing.T) {
	fleetFile := copyExample(t)
	dir := filepath.Dir(fleetFile)
	src, _ := os.ReadFile(fleetFile)
	// Without the OFED driver, which the gpu-operator actuator cannot move
	// with stg-h100's managed NICs.
	src = []byte(fleettest.WithoutOFEDDriver(string(src)))
	adopted := bytes.Replace(src, []byte("[[clusters.stg-h100.pools]]"), []byte("[clusters.stg-h100.gpu-operator]\nrelease = \"gpu-operator-1712345678\"\ndriver-management = \"clusterpolicy\"\n\n[policy.clusters.stg-h100]\nactuator = \"gpu-operator\"\n\n[[clusters.stg-h100.pools]]"), 1)
	if err := os.WriteFile(fleetFile, adopted, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "render", "-f", fleetFile)
	if code != ExitOK {
		t.Fatalf("render of the adopted cluster: exit %d\n%s%s", code, out, errOut)
	}
	if want := "gpufleet: warning: first render of cluster(s) prod-a100, prod-h100-a, prod-h100-b, with the GPU Operator below v26.7.0 managing drivers by NVIDIADriver"; !strings.Contains(errOut, want) || strings.Count(errOut, "warning:") != 1 || !strings.Contains(errOut, "`gpufleet init`") || !strings.Contains(errOut, "deletes every driver pod of that cluster at once") {
		t.Errorf("first render: stderr %q\nwant one warning naming the unadopted clusters (not stg-h100)", errOut)
	}
	if _, _, errOut := run(t, "render", "-f", fleetFile); strings.Contains(errOut, "warning") {
		t.Errorf("a second render warns again: %q", errOut)
	}
	written, err := os.ReadFile(filepath.Join(dir, "clusters/stg-h100/operators/helmrelease-gpu-operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// Dropping the table's driver management switches stg-h100 to NVIDIADriver.
	if err := os.WriteFile(fleetFile, bytes.Replace(adopted, []byte("driver-management = \"clusterpolicy\"\n"), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"render"}, {"render", "--check"}} {
		code, out, errOut := run(t, append(args, "-f", fleetFile)...)
		if code != ExitFailed || !strings.Contains(errOut, "cluster stg-h100: refusing to switch the GPU Operator from ClusterPolicy to NVIDIADriver driver management (gpu-operator v25.3.4 in the output folder, v25.3.4 in this render)") ||
			!strings.Contains(errOut, "nvidia-driver-daemonset") || !strings.Contains(errOut, "the gpu-operator actuator moves its nodes one at a time") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and the refusal", args, code, out, errOut)
		}
	}
	code, out, _ = run(t, "render", "-f", fleetFile, "-o", "json")
	if code != ExitFailed {
		t.Errorf("render -o json: exit %d, want %d", code, ExitFailed)
	}
	checkSchema(t, "Error", []byte(out))
	var doc ErrorDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "Error" || doc.ExitCode != ExitFailed || !strings.Contains(doc.Message, "cluster stg-h100: refusing to switch") {
		t.Errorf("render -o json: %v %+v", err, doc)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "clusters/stg-h100/operators/helmrelease-gpu-operator.yaml")); !bytes.Equal(now, written) {
		t.Error("a refused render changed the output folder")
	}
}
