package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// operatorsDir finds the shared operator charts next to the repository
// (../shared/operators from the directory holding go.mod), or skips.
func operatorsDir(t *testing.T) string { return sharedtest.Operators(t) }

// allVersionsFleet has one release per GPU Operator version in the shared
// charts, each paired with a Network Operator version, and a cluster on
// each release so that render writes NVIDIADrivers for all of them.
const allVersionsFleet = `
[releases.a]
gpu-operator = "v24.6.2"
network-operator = "v25.4.0"
driver = "550.90.07"

[releases.b]
gpu-operator = "v24.9.2"
network-operator = "v25.10.0"
driver = "550.127.08"

[releases.c]
gpu-operator = "v25.3.4"
network-operator = "v26.4.1"
driver = "570.172.08"

[releases.d]
gpu-operator = "v25.10.1"
network-operator = "v25.10.0"
driver = "580.95.05"

[releases.e]
gpu-operator = "v26.7.0"
network-operator = "v26.4.1"
driver = "580.95.05"

[clusters.one]
environment = "staging"

[[clusters.one.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2

[[waves]]
name = "all"
clusters = ["one"]

[promotion]
stable = "RELEASE"
`

func writeFleet(t *testing.T, stable string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(allVersionsFleet, "RELEASE", stable, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// squash collapses runs of blanks, so tests do not depend on how wide the
// table's columns came out.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestValidateRealChartsClean(t *testing.T) {
	ops := operatorsDir(t)
	for _, stable := range []string{"a", "b", "c", "d", "e"} {
		t.Run("cluster on "+stable, func(t *testing.T) {
			code, out, errOut := run(t, "validate", "-f", writeFleet(t, stable), "--charts", ops)
			if code != ExitOK || !strings.HasPrefix(out, "ok: ") {
				t.Errorf("exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

func TestValidateExample(t *testing.T) {
	ops := operatorsDir(t)
	code, out, errOut := run(t, "validate", "-f", "../../examples/fleet.toml", "--charts", ops, "-o", "json")
	var got struct {
		OK       bool
		Objects  int
		Findings []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if code != ExitOK || !got.OK || len(got.Findings) != 0 {
		t.Errorf("exit %d ok %v\n%s%s", code, got.OK, out, errOut)
	}
}

// TestValidateWrongVersion passes off the v24.9.2 chart as v25.3.4: render
// then writes kernelModuleType, which v24.9.2's NVIDIADriver lacks.
func TestValidateWrongVersion(t *testing.T) {
	ops := operatorsDir(t)
	dir := t.TempDir()
	copies := map[string]string{
		"gpu-operator/v24.9.2":     "gpu-operator/v25.3.4",
		"gpu-operator/v25.10.1":    "gpu-operator/v25.10.1",
		"network-operator/v26.4.1": "network-operator/v26.4.1",
	}
	for from, to := range copies {
		if err := os.CopyFS(filepath.Join(dir, to), os.DirFS(filepath.Join(ops, from))); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "validate", "-f", writeFleet(t, "c"), "--charts", dir)
	want := "NVIDIADriver/h100-570-172-08  spec.kernelModuleType: unknown field (exists in gpu-operator v25.10.1)  clusters/one/config/nvidiadriver-h100-570-172-08.yaml"
	if code != ExitFailed || !strings.Contains(squash(out), squash(want)) {
		t.Errorf("exit %d, want 1 and a line containing\n%s\ngot:\n%s%s", code, want, out, errOut)
	}
}

func TestValidateCouldNotCheck(t *testing.T) {
	code, out, _ := run(t, "validate", "-f", writeFleet(t, "a"), "--charts", t.TempDir())
	if code != ExitUnknown || !strings.Contains(out, "could not check: chart not found: gpu-operator v24.6.2") {
		t.Errorf("exit %d, want 3\n%s", code, out)
	}
}

func TestValidateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "--charts", "x", "--repo", "https://example.com"},
		{"validate", "-o", "xml"},
		{"crd-diff", "gpu-operator", "v1"},
		{"crd-diff", "gpu-operator", "v1", "v2", "-o", "xml"},
	} {
		if code, _, errOut := run(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

func TestCRDDiff(t *testing.T) {
	ops := operatorsDir(t)
	code, out, errOut := run(t, "crd-diff", "gpu-operator", "v25.3.4", "v25.10.1", "--charts", ops)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		`NVIDIADriver.nvidia.com  v1alpha1  added   spec.licensingConfig.secretName`,
		`NVIDIADriver.nvidia.com  v1alpha1  added   spec.secretEnv`,
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("no line containing %q in\n%s", want, out)
		}
	}
	code, out, _ = run(t, "crd-diff", "gpu-operator", "v25.10.1", "v26.7.0", "--charts", ops, "-o", "json")
	var got struct {
		Changes []struct{ Kind, Path, Op, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	found := map[string]string{}
	for _, c := range got.Changes {
		if c.Kind == "NVIDIADriver" {
			found[c.Path] = c.Op + " " + c.Detail
		}
	}
	for path, want := range map[string]string{
		"spec.default":                   `added {"type":"boolean","default":false}`,
		"spec.upgradePolicy.autoUpgrade": `added {"type":"boolean","default":true}`,
	} {
		if found[path] != want {
			t.Errorf("%s: got %q, want %q", path, found[path], want)
		}
	}
	if code, _, _ := run(t, "crd-diff", "gpu-operator", "v1.0.0", "v25.10.1", "--charts", ops); code != ExitUnknown {
		t.Errorf("unknown version: exit %d, want 3", code)
	}
}

// TestValidateEveryReleaseAsIfEachClusterRanIt: release c runs nowhere yet
// (d is stable), and its chart is really v24.9.2, whose NVIDIADriver lacks
// kernelModuleType. validate must check c's NVIDIADrivers all the same, as
// every cluster would get them once c is started.
func TestValidateEveryReleaseAsIfEachClusterRanIt(t *testing.T) {
	ops := operatorsDir(t)
	dir := t.TempDir()
	for from, to := range map[string]string{
		"gpu-operator/v24.9.2":      "gpu-operator/v25.3.4",
		"gpu-operator/v25.10.1":     "gpu-operator/v25.10.1",
		"network-operator/v26.4.1":  "network-operator/v26.4.1",
		"network-operator/v25.10.0": "network-operator/v25.10.0",
	} {
		if err := os.CopyFS(filepath.Join(dir, to), os.DirFS(filepath.Join(ops, from))); err != nil {
			t.Fatal(err)
		}
	}
	src := allVersionsFleet
	for _, r := range []string{"a", "b", "e"} {
		start := strings.Index(src, "[releases."+r+"]")
		src = src[:start] + src[start+strings.Index(src[start:], "\n\n")+2:]
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(src, "RELEASE", "d", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "-f", path, "--charts", dir)
	want := "c gpu-operator v25.3.4 NVIDIADriver/h100-570-172-08 spec.kernelModuleType: unknown field (exists in gpu-operator v25.10.1) clusters/one/config/nvidiadriver-h100-570-172-08.yaml"
	if code != ExitFailed || !strings.Contains(squash(out), want) {
		t.Errorf("exit %d, want 1 and a line containing\n%s\ngot:\n%s%s", code, want, out, errOut)
	}
}

// TestValidateAdoptedValuesAgainstSchema: a cluster's own chart values are
// rendered merged under gpufleet's at every release's version and checked
// against the chart's values.schema.json as Helm would check them. The
// GPU Operator's Node Feature Discovery subchart has a schema from v26.7.0:
// a cluster on v25.3.4 (release c, no schema) whose values give it a
// replica count as a word is refused at release e's v26.7.0, naming the
// cluster (exit 1: a problem found, not a check that could not be done);
// the same values with a number pass.
func TestValidateAdoptedValuesAgainstSchema(t *testing.T) {
	ops := operatorsDir(t)
	adopted := func(replicas string) string {
		src := strings.Replace(allVersionsFleet, "RELEASE", "c", 1)
		return strings.Replace(src, "[[clusters.one.pools]]", `[clusters.one.gpu-operator]
release = "gpu-operator-1712345678"
values = '''
driver:
  repository: registry.example.com/nvidia
node-feature-discovery:
  master:
    replicaCount: `+replicas+`
'''

[[clusters.one.pools]]`, 1)
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(adopted("two")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "-f", path, "--charts", ops)
	if code != ExitFailed {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"e gpu-operator v26.7.0 - values refused: chart gpu-operator values:", "replicaCount", "values of one"} {
		if !strings.Contains(squash(out), want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "could not check") || !strings.Contains(errOut, "1 problem(s), 0 chart(s) not checked") {
		t.Errorf("a refused value is a problem, not a chart not checked:\n%s%s", out, errOut)
	}
	code, out, _ = run(t, "validate", "-f", path, "--charts", ops, "-o", "json")
	var rep struct {
		OK       bool
		Failures []struct {
			Release, Chart, Version string
			ValuesRefused           bool
			Clusters                []string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "ValidateReport", []byte(out))
	if code != ExitFailed || rep.OK || len(rep.Failures) != 1 || !rep.Failures[0].ValuesRefused || rep.Failures[0].Release != "e" || strings.Join(rep.Failures[0].Clusters, ",") != "one" {
		t.Errorf("-o json: exit %d %+v", code, rep)
	}

	if err := os.WriteFile(path, []byte(adopted("2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "validate", "-f", path, "--charts", ops); code != ExitOK {
		t.Errorf("values the schema takes: exit %d\n%s%s", code, out, errOut)
	}
}
