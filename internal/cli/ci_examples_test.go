package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	// Only this test links actionlint: the gpufleet binary does not.
	"github.com/rhysd/actionlint"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// githubWorkflow is the part of a GitHub Actions workflow the test runs.
type githubWorkflow struct {
	Jobs map[string]struct {
		Name  string `json:"name"`
		Steps []struct {
			Name string            `json:"name"`
			Uses string            `json:"uses"`
			Run  string            `json:"run"`
			Env  map[string]string `json:"env"`
			With map[string]any    `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

// gitlabJob is the part of a GitLab CI job the test reads.
type gitlabJob struct {
	Image     string            `json:"image"`
	Rules     []map[string]any  `json:"rules"`
	Variables map[string]string `json:"variables"`
	Script    []string          `json:"script"`
	Artifacts struct {
		When    string            `json:"when"`
		Reports map[string]string `json:"reports"`
	} `json:"artifacts"`
}

// TestCIExamplesLint checks examples/ci/github-actions.yml with actionlint
// (syntax, expressions, contexts, action inputs) and that
// examples/ci/gitlab-ci.yml is YAML with the keys GitLab reads.
func TestCIExamplesLint(t *testing.T) {
	src, err := os.ReadFile("../../examples/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := linter.Lint("examples/ci/github-actions.yml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("actionlint: %s", e.Error())
	}
	// The linter finds what it should: an unknown context, a step
	// without run or uses.
	broken := "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such_thing.x }}\n      - name: nothing\n"
	if errs, err := linter.Lint("broken.yml", []byte(broken), nil); err != nil || len(errs) < 2 {
		t.Errorf("actionlint on a broken workflow: %d error(s), %v", len(errs), err)
	}
	var wf githubWorkflow
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["verify"]
	if !ok || job.Name != "gpufleet verify" {
		t.Errorf("the workflow's job is not verify named %q, the required check's name docs/promotion-and-gate.md gives", "gpufleet verify")
	}
	if i := slices.IndexFunc(job.Steps, func(s struct {
		Name string            `json:"name"`
		Uses string            `json:"uses"`
		Run  string            `json:"run"`
		Env  map[string]string `json:"env"`
		With map[string]any    `json:"with"`
	}) bool {
		return strings.HasPrefix(s.Uses, "actions/checkout@")
	}); i < 0 || job.Steps[i].With["fetch-depth"] != float64(0) {
		t.Error("the checkout does not fetch the whole history (fetch-depth: 0): verify reads the base")
	} else if job.Steps[i].With["persist-credentials"] != false {
		t.Error("the checkout leaves its token in .git/config (persist-credentials: false)")
	}
	// Every action is pinned by a full commit, with the release it is as a
	// comment: a tag can be moved to other code.
	pinned := regexp.MustCompile(`^\s*- uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v[0-9]+\.[0-9]+\.[0-9]+$`)
	for l := range strings.SplitSeq(string(src), "\n") {
		if strings.Contains(l, "uses:") && !pinned.MatchString(l) {
			t.Errorf("not pinned by commit: %q", l)
		}
	}

	src, err = os.ReadFile("../../examples/ci/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]gitlabJob
	if err := yaml.UnmarshalStrict(src, &jobs); err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	gl, ok := jobs["gpufleet-verify"]
	switch {
	case !ok:
		t.Fatal("gitlab-ci.yml has no gpufleet-verify job")
	case gl.Image == "" || len(gl.Script) == 0:
		t.Error("the job needs an image and a script")
	case gl.Variables["GIT_DEPTH"] != "0":
		t.Error(`GIT_DEPTH is not "0": verify reads the base revision and the commits since`)
	case gl.Artifacts.Reports["codequality"] != "gl-code-quality-report.json" || gl.Artifacts.When != "always":
		t.Errorf("artifacts: %+v; the Code Quality report must be kept when the job fails", gl.Artifacts)
	case len(gl.Rules) == 0 || !strings.Contains(gl.Rules[0]["if"].(string), "merge_request_event"):
		t.Errorf("rules %v: the job should run in merge request pipelines", gl.Rules)
	}
	if !slices.ContainsFunc(gl.Script, func(l string) bool { return strings.Contains(l, "--codequality gl-code-quality-report.json") }) {
		t.Error("the script does not write the report the artifacts keep")
	}
}

// TestCIExamplesRun runs the commands of both example CI files against a
// temporary fleet repository: a change made by `gpufleet start`, compared
// with main. `go install` is left out (the test is gpufleet): each
// `gpufleet` command runs in-process with its arguments as bash expands
// them, every other command runs in bash, with the variables the CI system
// would set. The fleet's chart repository is a port nothing listens on, so
// no test downloads charts: validate cannot run and verify must fail
// closed (exit 3) on that check alone, every other check passing. (validate
// with real charts is validate's own tests'.)
func TestCIExamplesRun(t *testing.T) {
	github, err := os.ReadFile("../../examples/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	gitlab, err := os.ReadFile("../../examples/ci/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := strings.Replace(string(fleettest.ExampleWithoutStack(t)), `repository = "https://helm.ngc.nvidia.com/nvidia"`, `repository = "http://127.0.0.1:1/nvidia"`, 1)
	dir, fleetFile, git := renderedRepo(t, []byte(src))
	base := git("rev-parse", "main")
	git("checkout", "-q", "-b", "start")
	mustRun(t, "start", "r2026-10", "-f", fleetFile)
	kubeconfig := closedPortKubeconfig(t, t.TempDir())
	kc, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	t.Run("github", func(t *testing.T) {
		var wf githubWorkflow
		if err := yaml.Unmarshal(github, &wf); err != nil {
			t.Fatal(err)
		}
		expr := map[string]string{
			"vars.GPUFLEET_VERSION":              "v0.0.0-test",
			"secrets.GPUFLEET_KUBECONFIG":        string(kc),
			"github.event.pull_request.base.sha": base,
		}
		env := []string{"GITHUB_ACTIONS=true", "RUNNER_TEMP=" + t.TempDir()}
		var verifyRuns int
		for _, st := range wf.Jobs["verify"].Steps {
			if st.Run == "" {
				continue
			}
			stepEnv := slices.Clone(env)
			for k, v := range st.Env {
				stepEnv = append(stepEnv, k+"="+expand(t, v, expr))
			}
			for _, line := range commands(st.Run) {
				if stdout, ok := runCILine(t, line, stepEnv); ok {
					verifyRuns++
					if !strings.Contains(stdout, "::error file=fleet.toml,line=") {
						t.Errorf("no GitHub annotation:\n%s", stdout)
					}
				}
			}
		}
		if verifyRuns != 1 {
			t.Errorf("%d gpufleet commands run, want one verify", verifyRuns)
		}
	})

	t.Run("gitlab", func(t *testing.T) {
		var jobs map[string]gitlabJob
		if err := yaml.Unmarshal(gitlab, &jobs); err != nil {
			t.Fatal(err)
		}
		env := []string{"GITLAB_CI=true", "GITHUB_ACTIONS=", "GPUFLEET_VERSION=v0.0.0-test", "GPUFLEET_KUBECONFIG=" + kubeconfig,
			"CI_MERGE_REQUEST_DIFF_BASE_SHA=" + base, "CI_PIPELINE_SOURCE=merge_request_event"}
		var verifyRuns int
		for _, line := range jobs["gpufleet-verify"].Script {
			if _, ok := runCILine(t, line, env); ok {
				verifyRuns++
			}
		}
		if verifyRuns != 1 {
			t.Errorf("%d gpufleet commands run, want one verify", verifyRuns)
		}
		report, err := os.ReadFile(filepath.Join(dir, "gl-code-quality-report.json"))
		if err != nil {
			t.Fatalf("no Code Quality report: %v", err)
		}
		if !strings.Contains(string(report), `"check_name": "gpufleet-verify/validate"`) {
			t.Errorf("the report does not say validate could not run:\n%s", report)
		}
	})
}

var ciExpr = regexp.MustCompile(`\$\{\{\s*([^}]+?)\s*\}\}`)

// expand replaces the GitHub expressions in s; an unknown one fails the
// test, so that it keeps up with the file.
func expand(t *testing.T, s string, values map[string]string) string {
	t.Helper()
	return ciExpr.ReplaceAllStringFunc(s, func(m string) string {
		name := ciExpr.FindStringSubmatch(m)[1]
		v, ok := values[name]
		if !ok {
			t.Errorf("the test has no value for ${{ %s }}", name)
		}
		return v
	})
}

// commands splits a run block into its commands, joining continued lines.
func commands(block string) []string {
	var out []string
	cur := ""
	for l := range strings.SplitSeq(block, "\n") {
		if before, ok := strings.CutSuffix(l, "\\"); ok {
			cur += before
			continue
		}
		if line := strings.TrimSpace(cur + l); line != "" {
			out = append(out, line)
		}
		cur = ""
	}
	return out
}

// runCILine runs one command of a CI file; for a gpufleet command it
// returns its stdout and true. verify must fail closed on validate alone.
func runCILine(t *testing.T, line string, env []string) (string, bool) {
	t.Helper()
	switch {
	case strings.HasPrefix(line, "go install "):
		return "", false
	case !strings.HasPrefix(line, "gpufleet "):
		cmd := exec.Command("bash", "-euc", line)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return "", false
	}
	// bash expands the line's variables and quotes; gpufleet runs here.
	cmd := exec.Command("bash", "-euc", `eval "set -- $0"; printf '%s\0' "$@"`, line)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("expanding %s: %v", line, err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")[1:]
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	code, stdout, stderr := run(t, args...)
	if code != ExitUnknown {
		t.Errorf("%s: exit %d, want 3 (validate cannot run)\n%s%s", line, code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^  validate +unknown`).MatchString(stdout) {
		t.Errorf("%s: validate is not the check that could not be made\n%s", line, stdout)
	}
	for _, check := range []string{"rendered", "lint", "promotion", "gate"} {
		if !regexp.MustCompile(`(?m)^  ` + check + ` +passed`).MatchString(stdout) {
			t.Errorf("%s: %s did not pass\n%s", line, check, stdout)
		}
	}
	if !bytes.Contains([]byte(stdout), []byte("1 step(s) the promotion commands allow: start r2026-10 at wave staging")) {
		t.Errorf("%s: the start was not found\n%s", line, stdout)
	}
	return stdout, true
}
