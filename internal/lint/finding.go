package lint

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Severity of a finding: errors fail the lint, warnings do not.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem, where it is and how to fix it.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Severity Severity `json:"severity"`
	// Rule is a short name of what was checked, e.g. "plaintext-secret".
	Rule    string `json:"rule"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s [%s]; fix: %s", f.File, f.Line, f.Severity, f.Message, f.Rule, f.Fix)
}

// Drift is the drift-repair time a Flux Kustomization's interval implies:
// a change made by hand is undone at the next reconciliation, on average
// half an interval away, plus the time the apply takes.
type Drift struct {
	Kustomization string        `json:"kustomization"`
	File          string        `json:"file"`
	Interval      time.Duration `json:"interval"`
	Mean          time.Duration `json:"mean"`
	Worst         time.Duration `json:"worst"`
}

// Report is the result of linting a repository.
type Report struct {
	Findings []Finding `json:"findings"`
	Drift    []Drift   `json:"drift"`
}

// Errors counts the findings of severity error.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

func (r *Report) sort() {
	slices.SortFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	// A folder several clusters apply is checked once per cluster; its
	// findings are reported once.
	r.Findings = slices.Compact(r.Findings)
	slices.SortFunc(r.Drift, func(a, b Drift) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Kustomization, b.Kustomization))
	})
}
