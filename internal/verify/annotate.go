package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Annotation formats: the CI systems verify can place findings in.
const (
	AnnotationsGitHub = "github"
	AnnotationsGitLab = "gitlab"
)

// WriteGitHub writes each finding as a GitHub Actions workflow command
// (`::error file=…,line=…,title=…::message`), which the runner shows on the
// file and line of the pull request's diff and in the job's summary.
//
// Every value is one inert line (cilog.Line: no newline, so none reaches
// the annotation, and nothing that ends the command) before it is escaped
// as the runner unescapes it; w is where gpufleet's own commands go
// (cilog.Commands).
func WriteGitHub(w io.Writer, r *Report) error {
	for _, f := range r.Findings {
		props := []string{"file=" + ghProperty(f.File)}
		if f.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", f.Line))
		}
		props = append(props, "title="+ghProperty(title(f)))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", f.Severity, strings.Join(props, ","), ghData(f.Message)); err != nil {
			return err
		}
	}
	return nil
}

// title names the check and, when there is one, the step.
func title(f Finding) string {
	t := "gpufleet verify " + f.Kind
	if f.Step != "" {
		t += " (" + f.Step + ")"
	}
	return t
}

// ghData escapes a workflow command's message as the runner unescapes it.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(printable(s))
}

// ghProperty escapes a workflow command's property value: ':' and ','
// end it otherwise.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(printable(s))
}

// CodeQualityIssue is one entry of a GitLab Code Quality report, the
// subset of the Code Climate format GitLab reads.
type CodeQualityIssue struct {
	Description string `json:"description"`
	CheckName   string `json:"check_name"`
	// Fingerprint identifies the issue across pipelines, so a merge
	// request shows what it adds and what it fixes.
	Fingerprint string              `json:"fingerprint"`
	Severity    string              `json:"severity"`
	Location    CodeQualityLocation `json:"location"`
}

// CodeQualityLocation places an issue in the repository.
type CodeQualityLocation struct {
	Path  string           `json:"path"`
	Lines CodeQualityLines `json:"lines"`
}

// CodeQualityLines is where the issue begins; GitLab requires it.
type CodeQualityLines struct {
	Begin int `json:"begin"`
}

var commitHash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// CodeQuality turns the findings into a GitLab Code Quality report: an
// error is "major", a warning "minor" (GitLab's scale: info, minor, major,
// critical, blocker). A finding about a whole file is placed on line 1.
func CodeQuality(r *Report) []CodeQualityIssue {
	out := []CodeQualityIssue{}
	for _, f := range r.Findings {
		sev := "major"
		if f.Severity == SeverityWarning {
			sev = "minor"
		}
		// Commit hashes are left out: a rebase does not make an issue new.
		sum := sha256.Sum256([]byte(strings.Join([]string{f.Kind, f.Step, f.File, commitHash.ReplaceAllString(f.Message, "")}, "\x00")))
		out = append(out, CodeQualityIssue{
			Description: printable(f.Message), CheckName: printable("gpufleet-verify/" + f.Kind), Fingerprint: hex.EncodeToString(sum[:16]), Severity: sev,
			Location: CodeQualityLocation{Path: printable(f.File), Lines: CodeQualityLines{Begin: max(f.Line, 1)}},
		})
	}
	return out
}

// WriteGitLab writes the Code Quality report as JSON.
func WriteGitLab(w io.Writer, r *Report) error {
	raw, err := json.MarshalIndent(CodeQuality(r), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
