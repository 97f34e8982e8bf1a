package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// verifyRepo is a fleet repository made as a user makes one: the fleet
// file, `gpufleet render`, a commit on main, then `gpufleet start r2026-10`.
func verifyRepo(t *testing.T) (dir, fleetFile string, git func(args ...string) string) {
	t.Helper()
	dir, fleetFile, git = renderedRepo(t, fleettest.ExampleWithoutStack(t))
	mustRun(t, "start", "r2026-10", "-f", fleetFile)
	return dir, fleetFile, git
}

// renderedRepo is a fleet repository holding fleet, rendered, committed
// on main.
func renderedRepo(t *testing.T, fleet []byte) (dir, fleetFile string, git func(args ...string) string) {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1", "GITHUB_ACTIONS": "", "GITLAB_CI": ""} {
		t.Setenv(k, v)
	}
	dir = t.TempDir()
	fleetFile = filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(fleetFile, fleet, 0o644); err != nil {
		t.Fatal(err)
	}
	git = func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	mustRun(t, "render", "-f", fleetFile)
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "fleet")
	return dir, fleetFile, git
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != ExitOK {
		t.Fatalf("gpufleet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// closedPortKubeconfig names every cluster of the example fleet as a
// context whose API server is a port nothing listens on.
func closedPortKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: closed\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: x\ncontexts:\n")
	for _, c := range []string{"stg-h100", "prod-h100-a", "prod-h100-b", "prod-a100"} {
		b.WriteString("- name: " + c + "\n  context:\n    cluster: closed\n    user: u\n")
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerifyCommand runs verify through the CLI: a promotion made by the
// commands passes, the command line's mistakes are usage errors, and what
// cannot be checked (a cluster unreachable, the charts missing) fails
// closed with exit 3.
func TestVerifyCommand(t *testing.T) {
	dir, fleetFile, git := verifyRepo(t)
	git("checkout", "-q", "-b", "next")
	mustRun(t, "approve", "r2026-10/prod-h100", "-f", fleetFile)
	// A promote whose commit does not record the gate: verify gates it.
	mustRun(t, "promote", "--skip-gate", "--reason", "the test commits by hand", "--no-commit", "-f", fleetFile)
	git("commit", "-q", "-m", "promote, committed by hand")

	code, out, errOut := run(t, "verify", "--base", "main", "-f", fleetFile, "--no-validate", "--no-gate")
	if code != ExitOK || !strings.Contains(out, "verify PASS") || !strings.Contains(out, "2. promote r2026-10 to wave prod-h100, canary cluster prod-h100-a [gate skipped: stg-h100]") || !strings.Contains(out, "--no-gate: the live clusters were not checked") {
		t.Errorf("made by the commands: exit %d\n%s%s", code, out, errOut)
	}

	for _, args := range [][]string{
		{"verify", "-f", fleetFile},
		{"verify", "--base", "main", "-f", fleetFile, "--annotations", "github", "-o", "json"},
		{"verify", "--base", "main", "-f", fleetFile, "--annotations", "jenkins"},
		{"verify", "--base", "main", "-f", fleetFile, "--codequality", "x.json"},
	} {
		if code, out, errOut := run(t, args...); code != ExitUsage {
			t.Errorf("gpufleet %s: exit %d, want 2\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if code, _, errOut := run(t, "verify", "--base", "no-such-branch", "-f", fleetFile, "--no-validate", "--no-gate"); code != ExitUnknown || !strings.Contains(errOut, `base revision "no-such-branch"`) {
		t.Errorf("unknown base: exit %d, %s", code, errOut)
	}

	kubeconfig := closedPortKubeconfig(t, dir)
	code, out, errOut = run(t, "verify", "--base", "main", "-f", fleetFile, "--no-validate", "--kubeconfig", kubeconfig, "--timeout", "5s")
	if code != ExitUnknown || !strings.Contains(out, "gate       unknown") || !strings.Contains(out, "cluster stg-h100") || !strings.Contains(out, "verify UNKNOWN") {
		t.Errorf("unreachable cluster: exit %d, want 3\n%s%s", code, out, errOut)
	}

	code, out, errOut = run(t, "verify", "--base", "main", "-f", fleetFile, "--no-gate", "--charts", filepath.Join(dir, "no-charts"))
	if code != ExitUnknown || !strings.Contains(out, "validate   unknown") || !strings.Contains(out, "--no-validate") {
		t.Errorf("charts missing: exit %d, want 3\n%s%s", code, out, errOut)
	}
}

var (
	goldenShort = regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	goldenLine  = regexp.MustCompile(`(line=|"line": |"begin": )([0-9]+)`)
)

// goldenLines names the lines of [promotion]'s keys in doc, so that the
// golden files check each finding is on its key's line without changing
// whenever the example fleet above [promotion] does.
func goldenLines(t *testing.T, fleetFile, doc string) string {
	t.Helper()
	src, err := os.ReadFile(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for i, l := range strings.Split(string(src), "\n") {
		for _, key := range []string{"stable", "rollout", "approved", "paused"} {
			if strings.HasPrefix(l, key+" = ") {
				names[strconv.Itoa(i+1)] = "$LINE(promotion." + key + ")"
			}
		}
	}
	return goldenLine.ReplaceAllStringFunc(doc, func(m string) string {
		sub := goldenLine.FindStringSubmatch(m)
		if name, ok := names[sub[2]]; ok {
			return sub[1] + name
		}
		return m
	})
}

// TestVerifyGolden checks verify's -o json document against the schema
// and a golden file, and its GitHub and GitLab annotations against theirs
// (go test -run TestVerifyGolden -update rewrites them), on two changes
// made of a step committed with --skip-gate and then: an approval, by
// hand, of something that does not wait; a fleet file edited without
// rendering it.
func TestVerifyGolden(t *testing.T) {
	dir, fleetFile, git := verifyRepo(t)
	edit := func(from, to string) {
		t.Helper()
		src, err := os.ReadFile(fleetFile)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(src), from, to, 1)
		if edited == string(src) {
			t.Fatalf("no %q in the fleet file", from)
		}
		if err := os.WriteFile(fleetFile, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skipped := func(branch string) {
		git("checkout", "-q", "-B", branch, "main")
		mustRun(t, "approve", "r2026-10/prod-h100", "-f", fleetFile)
		mustRun(t, "promote", "--skip-gate", "--reason", "INC-1234: staging API down, canary verified by hand", "-f", fleetFile)
	}
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"verify-refused", func() {
			skipped("refused")
			edit("approved = []", `approved = ["r2026-10/prod-ampere"]`)
			mustRun(t, "render", "-f", fleetFile)
			git("commit", "-q", "-am", "approve prod-ampere by hand")
		}},
		{"verify-stale", func() {
			skipped("stale")
			edit(`soak = "30m"`, `soak = "45m"`)
			git("commit", "-q", "-am", "a longer soak, not rendered")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GITHUB_ACTIONS", "")
			c.change()
			codeQuality := filepath.Join(dir, "gl-code-quality-report.json")
			base := []string{"verify", "--base", "main", "-f", fleetFile, "--no-validate", "--no-gate"}
			code, doc, errOut := run(t, append(base, "-o", "json")...)
			if code != ExitFailed {
				t.Fatalf("exit %d, want 1\n%s%s", code, doc, errOut)
			}
			checkSchema(t, "VerifyReport", []byte(doc))
			code, text, _ := run(t, append(base, "--annotations", "github")...)
			_, github, _ := strings.Cut(text, "\nverify FAIL: a check failed\n")
			if code != ExitFailed || !strings.HasPrefix(github, "::") {
				t.Errorf("github: exit %d\n%s", code, text)
			}
			if code, _, _ := run(t, append(base, "--annotations", "gitlab", "--codequality", codeQuality)...); code != ExitFailed {
				t.Errorf("gitlab: exit %d", code)
			}
			gitlab, err := os.ReadFile(codeQuality)
			if err != nil {
				t.Fatal(err)
			}
			// Auto: a GitHub Actions job gets the workflow commands unasked.
			t.Setenv("GITHUB_ACTIONS", "true")
			if _, out, _ := run(t, base...); out != text {
				t.Errorf("GITHUB_ACTIONS=true: not the same as --annotations github\n%s", out)
			}
			for suffix, got := range map[string]string{".json": doc, "-github.txt": github, "-gitlab.json": string(gitlab)} {
				got = goldenLines(t, fleetFile, goldenShort.ReplaceAllString(normalize(got, dir), "$$SHORT"))
				golden := filepath.Join("testdata", "golden", c.name+suffix)
				if *updateGolden {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test -run TestVerifyGolden -update writes it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs:\n%s", golden, got)
				}
			}
		})
	}
}

// TestVerifyValidatesCharts runs verify's validate on the real operator
// charts, as `gpufleet validate --charts` reads them.
func TestVerifyValidatesCharts(t *testing.T) {
	ops := operatorsDir(t)
	_, fleetFile, _ := verifyRepo(t)
	code, out, errOut := run(t, "verify", "--base", "main", "-f", fleetFile, "--no-gate", "--charts", ops)
	if code != ExitOK || !regexp.MustCompile(`(?m)^  validate +passed +[0-9]+ custom resource\(s\) in 3 release\(s\) valid`).MatchString(out) {
		t.Errorf("exit %d, want 0 with validate passed\n%s%s", code, out, errOut)
	}
}

// TestVerifyCommandRefusesWhatMovesClusters: the cases through the
// command line, in the middle of a rollout: a change of the stable
// release's driver, of the release in flight's driver, and a production
// cluster moved into the wave in flight each exit 1 at their line, though
// [promotion] is unchanged; a new release beside the rollout exits 0.
func TestVerifyCommandRefusesWhatMovesClusters(t *testing.T) {
	_, fleetFile, git := verifyRepo(t)
	src, err := os.ReadFile(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		edits []string
		code  int
		says  string
	}{
		{[]string{`driver = "570.172.08"`, `driver = "570.195.03"`}, ExitFailed, "releases.r2026-06.driver changed (570.172.08 → 570.195.03) while r2026-06 runs on 4 cluster(s)"},
		{[]string{`driver = "580.95.05"`, `driver = "580.105.08"`}, ExitFailed, "releases.r2026-10.driver changed (580.95.05 → 580.105.08) while r2026-10 runs on 1 cluster(s) (stg-h100)"},
		{[]string{`clusters = ["stg-h100"]`, `clusters = ["stg-h100", "prod-h100-b"]`, `clusters = ["prod-h100-a", "prod-h100-b"]`, `clusters = ["prod-h100-a"]`}, ExitFailed, "cluster prod-h100-b moves to release r2026-10 (it runs r2026-06) because the waves changed"},
		{[]string{"[clusters.stg-h100]", "[releases.r2027-01]\ngpu-operator = \"v25.10.1\"\ndriver = \"580.105.08\"\n\n[clusters.stg-h100]"}, ExitOK, "clusters   passed"},
	} {
		git("checkout", "-q", "-B", "case-"+strconv.Itoa(i), "main")
		text := string(src)
		for j := 0; j < len(c.edits); j += 2 {
			if !strings.Contains(text, c.edits[j]) {
				t.Fatalf("case %d: no %q in the fleet file", i, c.edits[j])
			}
			text = strings.Replace(text, c.edits[j], c.edits[j+1], 1)
		}
		if err := os.WriteFile(fleetFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "render", "-f", fleetFile)
		git("add", "-A")
		git("commit", "-q", "-m", "an edit")
		code, out, errOut := run(t, "verify", "--base", "main", "-f", fleetFile, "--no-validate", "--no-gate")
		if code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("case %d: exit %d (want %d), want %q in\n%s%s", i, code, c.code, c.says, out, errOut)
		}
	}
}
