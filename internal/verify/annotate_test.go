package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAnnotationsAreInert: what a change names (a file, a step, a message)
// enters the report as one inert line (Report.add), and each printer keeps
// it so: a GitHub annotation carries no line break after the runner's
// unescaping and no second command, and a GitLab issue none either.
func TestAnnotationsAreInert(t *testing.T) {
	r := &Report{}
	hostile := "db\n::stop-commands::tok\r%0A::error::x ##[warning]y \x1b[31m"
	r.add(Finding{Kind: CheckLint, Step: "promote\n::error::s", File: "a\n::error file=x::b.yaml", Line: 3, Message: hostile, Severity: SeverityError})
	r.add(Finding{Kind: CheckLint, File: "c.yaml", Message: "multi-line\nerror\n", Severity: SeverityWarning})
	r.addCheck(CheckLint, StatusFailed, "summary\n::error::forged")

	for _, f := range r.Findings {
		for _, s := range []string{f.Kind, f.Step, f.File, f.Message} {
			if strings.ContainsAny(s, "\r\n\x1b") || strings.HasPrefix(s, "::") || strings.Contains(s, "##[") {
				t.Errorf("a finding holds %q", s)
			}
		}
	}
	if got, want := r.Findings[1].Message, "multi-line; error"; got != want {
		t.Errorf("a multi-line message reads %q, want %q", got, want)
	}
	if s := r.Checks[0].Summary; strings.Contains(s, "\n") {
		t.Errorf("a check's summary holds a line break: %q", s)
	}

	var gh bytes.Buffer
	if err := WriteGitHub(&gh, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(gh.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 findings:\n%s", len(lines), gh.String())
	}
	for _, l := range lines {
		info, data, ok := strings.Cut(strings.TrimPrefix(l, "::"), "::")
		if !ok || !strings.HasPrefix(l, "::") || strings.Contains(l, "##[") {
			t.Errorf("not one annotation: %q", l)
		}
		unescaped := strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(data)
		if strings.ContainsAny(unescaped, "\r\n") || strings.ContainsAny(info, "\r\n") {
			t.Errorf("an annotation carries a line break: %q", l)
		}
	}

	var gl bytes.Buffer
	if err := WriteGitLab(&gl, r); err != nil {
		t.Fatal(err)
	}
	var issues []CodeQualityIssue
	if err := json.Unmarshal(gl.Bytes(), &issues); err != nil {
		t.Fatal(err)
	}
	for _, is := range issues {
		for _, s := range []string{is.Description, is.CheckName, is.Location.Path} {
			if strings.ContainsAny(s, "\r\n\x1b") || strings.Contains(s, "##[") {
				t.Errorf("a GitLab issue holds %q", s)
			}
		}
	}
}
