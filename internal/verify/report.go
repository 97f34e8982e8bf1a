package verify

import (
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/cilog"
)

// Check names, also the kinds of their findings. They are part of the
// -o json document and of the annotations' titles: CI rules may match them.
const (
	CheckRendered  = "rendered"
	CheckValidate  = "validate"
	CheckLint      = "lint"
	CheckPromotion = "promotion"
	CheckGate      = "gate"
	// KindGateSkipped is the finding of a step committed with --skip-gate:
	// a warning, or an error with Options.RefuseSkipGate.
	KindGateSkipped = "gate-skipped"
)

// Check statuses.
const (
	StatusPassed = "passed"
	StatusFailed = "failed"
	// StatusUnknown is a check that could not be made: fail closed (exit 3).
	StatusUnknown = "unknown"
	// StatusSkipped is a check left out on request (--no-validate, --no-gate).
	StatusSkipped = "skipped"
)

// Severities of a finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Exit codes, as every gpufleet command has them.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitUnknown = 3
)

// Finding is one thing a check found, placed in the repository so that a
// CI system can show it on the line it is about.
type Finding struct {
	// Kind is the check that found it (CheckRendered …) or KindGateSkipped.
	Kind string `json:"kind"`
	// Step is the promotion step it is about ("promote r2026-10 to wave
	// prod-h100"), when it is about one.
	Step string `json:"step,omitempty"`
	// File is relative to the repository's root; Line is 1-based, 0 when
	// the finding is about the whole file (a rendered file that is stale).
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// Check is one check and how it ended.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Summary says in one line what was checked or why not.
	Summary string `json:"summary"`
}

// StepReport is one step of the sequence found for the change of
// [promotion], with what verify did about its gate.
type StepReport struct {
	Summary string `json:"summary"`
	// Gate lists the clusters the step needs the gate on; empty when none.
	Gate []string `json:"gate,omitempty"`
	// GateStatus is passed, failed, unknown or skipped (--no-gate, or the
	// step's commit skipped the gate); empty when the step needs no gate.
	GateStatus string `json:"gateStatus,omitempty"`
	// Commit is the commit of the change that recorded the step, when one
	// did (`gpufleet: <summary>`).
	Commit string `json:"commit,omitempty"`
}

// Report is what verify found.
type Report struct {
	// Base is the base revision, resolved to a commit.
	Base string `json:"base"`
	// Revision is the commit the gate expects Flux to have applied.
	Revision string `json:"revision"`
	// FleetFile is the fleet file's path relative to the repository root.
	FleetFile string       `json:"fleetFile"`
	Steps     []StepReport `json:"steps"`
	Checks    []Check      `json:"checks"`
	Findings  []Finding    `json:"findings"`
}

// ExitCode is 1 when any check failed, else 3 when any could not be made,
// else 0: a problem found outranks one not looked at, and nothing passes
// unless every check that was asked for was made.
func (r *Report) ExitCode() int {
	unknown := false
	for _, c := range r.Checks {
		switch c.Status {
		case StatusFailed:
			return ExitFailed
		case StatusUnknown:
			unknown = true
		}
	}
	if unknown {
		return ExitUnknown
	}
	return ExitOK
}

// Check returns the check named name, or nil.
func (r *Report) Check(name string) *Check {
	i := slices.IndexFunc(r.Checks, func(c Check) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &r.Checks[i]
}

// addCheck and add are where every text of a check and a finding enters
// the report, and so every printer (text, -o json, GitHub annotations,
// GitLab's report): file names, object names, messages and chart errors
// come from the change, and each is made one inert line here (see
// package cilog), a line of a multi-line error joined with "; ".
func (r *Report) addCheck(name, status, summary string) {
	r.Checks = append(r.Checks, Check{Name: name, Status: status, Summary: printable(summary)})
}

func (r *Report) add(f Finding) {
	f.Kind, f.Step, f.File, f.Message = printable(f.Kind), printable(f.Step), printable(f.File), printable(f.Message)
	r.Findings = append(r.Findings, f)
}

// printable is s as one inert line of a CI log.
func printable(s string) string {
	return cilog.Line(strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "; "))
}
