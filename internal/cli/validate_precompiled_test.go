package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestValidatePrecompiledDrivers turns every release of allVersionsFleet
// (one per GPU Operator version, v24.6.2 … v26.7.0) into precompiled
// drivers of its branch and validates them: every release's NVIDIADriver,
// with usePrecompiled and the branch as a string, and its DriverRollout
// targeting the branch, must pass that exact version's CRDs.
func TestValidatePrecompiledDrivers(t *testing.T) {
	ops := operatorsDir(t)
	src := regexp.MustCompile(`driver = "([0-9]{3})\.[0-9.]+"`).ReplaceAllString(allVersionsFleet, "driver = \"$1\"\nprecompiled = true")
	if n := strings.Count(src, "precompiled = true"); n != 5 {
		t.Fatalf("want 5 precompiled releases, got %d", n)
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(src, "RELEASE", "e", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "-f", path, "--charts", ops, "-o", "json")
	var got struct {
		OK       bool
		Objects  int
		Findings []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("json: %v\n%s%s", err, out, errOut)
	}
	if code != ExitOK || !got.OK || len(got.Findings) != 0 {
		t.Errorf("exit %d ok %v\n%s%s", code, got.OK, out, errOut)
	}
	t.Logf("%d objects checked", got.Objects)
}

// TestValidateClusterPolicyMode: `gpufleet validate` renders and checks
// the GPU Operator in ClusterPolicy mode for a cluster adopted so, at every
// release of allVersionsFleet (v24.6.2 … v26.7.0), and accepts a release
// without a Network Operator.
func TestValidateClusterPolicyMode(t *testing.T) {
	ops := operatorsDir(t)
	src := strings.Replace(allVersionsFleet, "RELEASE", "c", 1)
	src = strings.Replace(src, "[[clusters.one.pools]]", "[clusters.one.gpu-operator]\nrelease = \"gpu-operator-1712345678\"\ndriver-management = \"clusterpolicy\"\n\n[[clusters.one.pools]]", 1)
	src = strings.Replace(src, "gpu-operator = \"v25.10.1\"\nnetwork-operator = \"v25.10.0\"\n", "gpu-operator = \"v25.10.1\"\n", 1)
	src += "\n[policy]\nactuator = \"gpu-operator\"\n"
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "-f", path, "--charts", ops)
	if code != ExitOK || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}
