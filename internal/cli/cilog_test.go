package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// runnerCommand is a workflow command as a GitHub runner reads one line
// of a job's output, or ok false when the line is text: "::" at the line's
// start after spaces, or the older "##[" anywhere (see package cilog).
type runnerCommand struct {
	name  string
	props map[string]string
	data  string
}

// readCommand reads line the way the runner's ActionCommand does, with its
// unescaping of properties and data.
func readCommand(line string) (runnerCommand, bool) {
	if strings.Contains(line, "##[") {
		return runnerCommand{name: "##["}, true
	}
	rest := strings.TrimLeftFunc(line, unicode.IsSpace)
	if !strings.HasPrefix(rest, "::") {
		return runnerCommand{}, false
	}
	info, data, ok := strings.Cut(rest[2:], "::")
	if !ok {
		return runnerCommand{}, false
	}
	name, props, _ := strings.Cut(info, " ")
	c := runnerCommand{name: name, props: map[string]string{},
		data: strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(data)}
	for kv := range strings.SplitSeq(props, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			c.props[k] = strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(v)
		}
	}
	return c, true
}

// hostileRepo is a fleet repository whose change names files and objects
// to forge CI log commands: a file named as a workflow command, a folder
// whose name holds a newline and ::stop-commands::, and a plaintext Secret
// whose name holds a newline, ::error::, %0A and ##[. lint reports them,
// so verify prints them.
func hostileRepo(t *testing.T) (dir, fleetFile string) {
	t.Helper()
	dir, fleetFile, git := renderedRepo(t, fleettest.ExampleWithoutStack(t))
	git("checkout", "-q", "-b", "hostile")
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: \"db\\n::error file=fleet.toml,line=1::forged %0A::warning::forged ##[error]forged\"\nstringData:\n  password: hunter2\n"
	for _, p := range []string{
		"::error file=fleet.toml,line=1::forged.yaml",
		filepath.Join("notes", "x\n::stop-commands::tok", "secret.yaml"),
		filepath.Join("notes", "\u2028##[warning]y.yaml"),
	} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "hostile names")
	return dir, fleetFile
}

var ourAnnotation = regexp.MustCompile(`^::(error|warning) file=[^,]*(,line=[0-9]+)?,title=gpufleet verify [a-z-]+( \([^)]*\))?::`)

// TestVerifyOutputCannotBeForged: names a change chose reach verify's text,
// its GitHub annotations, its JSON and its GitLab report, and in none of
// them can they start a line with "::", hold "##[", stop the runner's
// commands or put a newline into an annotation: the runner reads exactly
// the annotations verify means, one per finding.
func TestVerifyOutputCannotBeForged(t *testing.T) {
	dir, fleetFile := hostileRepo(t)
	base := []string{"verify", "--base", "main", "-f", fleetFile, "--no-gate", "--no-validate"}

	code, out, errOut := run(t, append(base, "--annotations", "github")...)
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1 (plaintext Secrets)\n%s%s", code, out, errOut)
	}
	var doc VerifyDocument
	_, js, _ := run(t, append(base, "-o", "json")...)
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, js)
	}
	annotations := 0
	for line := range strings.SplitSeq(out+errOut, "\n") {
		c, ok := readCommand(line)
		if !ok {
			continue
		}
		annotations++
		if !ourAnnotation.MatchString(line) || (c.name != "error" && c.name != "warning") {
			t.Errorf("the runner reads a command verify did not mean: %q", line)
		}
		for k, v := range c.props {
			if strings.ContainsAny(v, "\r\n") {
				t.Errorf("property %s of an annotation holds a line break: %q", k, v)
			}
		}
		if strings.ContainsAny(c.data, "\r\n") {
			t.Errorf("an annotation's message holds a line break: %q", c.data)
		}
	}
	if annotations != len(doc.Findings) || annotations < 3 {
		t.Errorf("the runner reads %d commands, want one per finding (%d, at least the 3 Secrets)\n%s", annotations, len(doc.Findings), out)
	}
	if strings.ContainsAny(out+errOut, "\r\x1b\u2028") {
		t.Errorf("a control character reached the log:\n%q", out)
	}
	var forged int
	for _, f := range doc.Findings {
		if strings.Contains(f.Message, "forged") {
			forged++
		}
	}
	if forged < 3 {
		t.Errorf("the hostile Secrets are not reported (%d findings name them):\n%s", forged, js)
	}

	for line := range strings.SplitSeq(js, "\n") {
		if _, ok := readCommand(line); ok {
			t.Errorf("-o json holds a command: %q", line)
		}
	}
	_, yml, _ := run(t, append(base, "-o", "yaml")...)
	for line := range strings.SplitSeq(yml, "\n") {
		if _, ok := readCommand(line); ok {
			t.Errorf("-o yaml holds a command: %q", line)
		}
	}

	report := filepath.Join(dir, "gl-code-quality-report.json")
	if code, out, errOut := run(t, append(base, "--annotations", "gitlab", "--codequality", report)...); code != ExitFailed {
		t.Fatalf("gitlab: exit %d\n%s%s", code, out, errOut)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var issues []struct {
		Description string `json:"description"`
		Location    struct {
			Path string `json:"path"`
		} `json:"location"`
	}
	if err := json.Unmarshal(raw, &issues); err != nil {
		t.Fatalf("the GitLab report is not JSON: %v", err)
	}
	for _, is := range issues {
		for _, s := range []string{is.Description, is.Location.Path} {
			if strings.ContainsAny(s, "\r\n\x1b") || strings.Contains(s, "##[") {
				t.Errorf("a GitLab issue holds a line break, an escape or ##[: %q", s)
			}
		}
	}
}

// TestEveryCommandOutputIsInert: the same holds for every command's
// output and errors, not only verify's: lint prints the hostile names, and
// a fleet file whose key holds a newline and ::stop-commands:: is refused
// without the line it would forge.
func TestEveryCommandOutputIsInert(t *testing.T) {
	dir, fleetFile := hostileRepo(t)
	editFleet(t, fleetFile, "[promotion]\n", "[\"x\\n::stop-commands::tok\"]\na = 1\n\n[promotion]\n")
	for _, args := range [][]string{
		{"lint", dir},
		{"render", "-f", fleetFile},
		{"validate", "-f", fleetFile},
	} {
		code, out, errOut := run(t, args...)
		if code == ExitOK {
			t.Errorf("gpufleet %s: exit 0, want a problem found", strings.Join(args, " "))
		}
		for line := range strings.SplitSeq(out+errOut, "\n") {
			if _, ok := readCommand(line); ok {
				t.Errorf("gpufleet %s prints a command: %q", strings.Join(args, " "), line)
			}
		}
		if strings.ContainsAny(out+errOut, "\r\x1b\u2028") {
			t.Errorf("gpufleet %s prints a control character: %q", strings.Join(args, " "), out+errOut)
		}
	}
}
