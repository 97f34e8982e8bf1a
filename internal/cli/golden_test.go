package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the JSON output")

// cliSchema compiles one definition of docs/schema/cli.schema.json.
func cliSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	abs, err := filepath.Abs("../../docs/schema/cli.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.NewCompiler().Compile(abs + "#/$defs/" + def)
	if err != nil {
		t.Fatalf("schema %s: %v", def, err)
	}
	return s
}

// checkSchema validates one document against a definition of the schema.
func checkSchema(t *testing.T, def string, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	if err := cliSchema(t, def).Validate(inst); err != nil {
		t.Errorf("does not follow docs/schema/cli.schema.json#/$defs/%s: %v\n%s", def, err, doc)
	}
}

var (
	goldenSHA  = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	goldenTook = regexp.MustCompile(`"took": [0-9]+`)
)

// normalize takes out of a document what differs between runs: the
// temporary folder, commit hashes, durations.
func normalize(doc, dir string) string {
	s := strings.ReplaceAll(doc, dir, "$DIR")
	s = goldenSHA.ReplaceAllString(s, "$$SHA")
	return goldenTook.ReplaceAllString(s, `"took": 0`)
}

// TestGoldenJSON runs the commands a script would read with -o json (and
// one with -o yaml), success and each kind of refusal, against a fleet
// repository in a temporary folder, in an order that moves its promotion
// on. Each document must follow its definition in docs/schema/cli.schema.json
// and equal its golden file (go test -run TestGoldenJSON -update rewrites
// them), and the exit code must be the one without -o.
func TestGoldenJSON(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	fleetFile := copyExample(t)
	dir := filepath.Dir(fleetFile)
	// A kubeconfig without the fleet's contexts: every cluster read fails
	// closed, the same way on every machine.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[clusters.x]\nenvironment = \"prod\"\nfoo = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	steps := []struct {
		name string
		// setup runs before the command.
		setup func()
		args  []string
		code  int
		def   string
	}{
		{"render", nil, []string{"render", "-f", fleetFile, "-o", "json"}, ExitOK, "RenderResult"},
		{"render-check-up-to-date", func() {
			git("init", "-q", "-b", "main")
			git("add", "-A")
			git("commit", "-q", "-m", "fleet")
		}, []string{"render", "--check", "-f", fleetFile, "-o", "json"}, ExitOK, "RenderResult"},
		{"status", nil, []string{"status", "-f", fleetFile, "-o", "json"}, ExitOK, "Status"},
		{"plan-start", nil, []string{"plan", "start", "r2026-10", "-f", fleetFile, "-o", "json"}, ExitOK, "Plan"},
		{"plan-refused", nil, []string{"plan", "approve", "x/y", "-f", fleetFile, "-o", "json"}, ExitFailed, "Error"},
		{"approve-nothing-waits", nil, []string{"approve", "r2026-10/prod-h100", "-f", fleetFile, "-o", "json"}, ExitFailed, "Error"},
		{"start", nil, []string{"start", "r2026-10", "-f", fleetFile, "-o", "json"}, ExitOK, "PromotionResult"},
		{"approve-not-waiting", nil, []string{"approve", "r2026-10/prod-h100-b", "-f", fleetFile, "-o", "json"}, ExitFailed, "Error"},
		{"pause", nil, []string{"pause", "-f", fleetFile, "-o", "json"}, ExitOK, "PromotionResult"},
		{"approve-paused", nil, []string{"approve", "r2026-10/prod-h100", "-f", fleetFile, "-o", "json"}, ExitFailed, "Error"},
		{"resume", nil, []string{"resume", "-f", fleetFile, "-o", "json"}, ExitOK, "PromotionResult"},
		{"approve-wave", nil, []string{"approve", "r2026-10/prod-h100", "-f", fleetFile, "-o", "json"}, ExitOK, "PromotionResult"},
		{"promote-gate-unknown", nil, []string{"promote", "-f", fleetFile, "--kubeconfig", kubeconfig, "-o", "json"}, ExitFailed, "Error"},
		{"gate-unknown", nil, []string{"gate", "--wave", "staging", "-f", fleetFile, "--kubeconfig", kubeconfig, "-o", "json"}, ExitUnknown, "GateReport"},
		{"explain-unreadable", nil, []string{"explain", "stg-h100", "-f", fleetFile, "--kubeconfig", kubeconfig, "-o", "json"}, ExitUnknown, "Error"},
		{"fleet-problems", nil, []string{"status", "-f", bad, "-o", "json"}, ExitFailed, "Error"},
		{"usage-yaml", nil, []string{"status", "--bogus", "-o", "yaml"}, ExitUsage, "Error"},
		{"usage-output", nil, []string{"render", "-f", fleetFile, "--output-dir", dir, "-o", "xml"}, ExitUsage, ""},
		{"lint", nil, []string{"lint", dir, "-o", "json"}, ExitFailed, "LintReport"},
		{"version", nil, []string{"version", "-f", fleetFile, "-o", "json"}, ExitOK, "Version"},
		{"validate", nil, []string{"validate", "-f", fleetFile, "--charts", "$OPERATORS", "-o", "json"}, ExitOK, "ValidateReport"},
		{"simulate", nil, []string{"simulate", "-f", fleetFile, "--cluster", "stg-h100", "-o", "json"}, ExitOK, "Simulation"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.setup != nil {
				st.setup()
			}
			args := slices.Clone(st.args)
			for i, a := range args {
				if a == "$OPERATORS" {
					// Only this step needs the shared operator charts.
					args[i] = operatorsDir(t)
				}
			}
			code, out, errOut := run(t, args...)
			if code != st.code {
				t.Fatalf("gpufleet %s: exit %d, want %d\n%s%s", strings.Join(st.args, " "), code, st.code, out, errOut)
			}
			if st.def == "" {
				// A bad -o cannot be answered in the format it names.
				if out != "" || !strings.Contains(errOut, "-o must be text, json or yaml") {
					t.Errorf("stdout %q, stderr %q", out, errOut)
				}
				return
			}
			doc := []byte(out)
			if st.args[len(st.args)-1] == "yaml" {
				var err error
				if doc, err = yaml.YAMLToJSON(doc); err != nil {
					t.Fatalf("not YAML: %v\n%s", err, out)
				}
				var v any
				_ = json.Unmarshal(doc, &v)
				doc, _ = json.MarshalIndent(v, "", "  ")
				doc = append(doc, '\n')
			}
			checkSchema(t, st.def, doc)
			switch st.name {
			case "version", "simulate":
				// The build's own version and commit, and a rehearsal that
				// starts now: the schema is the check.
				return
			}
			got := normalize(string(doc), dir)
			golden := filepath.Join("testdata", "golden", st.name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestGoldenJSON -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("gpufleet %s differs from %s:\n%s", strings.Join(st.args, " "), golden, got)
			}
		})
	}
}
