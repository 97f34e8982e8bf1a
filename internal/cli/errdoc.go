package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// ErrorDocument is an error as -o json and -o yaml print it, on stdout:
// a script that asked for a machine format reads one document whatever
// happened, and the exit code is the same as without -o.
type ErrorDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ExitCode is the process's exit code: 1 a problem was found, 2 a bad
	// command line, 3 could not find out.
	ExitCode int `json:"exitCode"`
	// Reason names the exit code: Failed, Usage or Unknown.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Problems are the fleet file's problems, each at its position.
	Problems []ProblemDocument `json:"problems,omitempty"`
	// Waiting is what the rollout waits for, when a promotion command was
	// refused: the exact approval names among them.
	Waiting []WaitingDocument `json:"waiting,omitempty"`
	// Gate is the gate's report when the gate refused a promotion.
	Gate *gate.Report `json:"gate,omitempty"`
}

// ProblemDocument is one problem of the fleet file.
type ProblemDocument struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// WaitingDocument is one thing the rollout waits for.
type WaitingDocument struct {
	// Approval is the name `gpufleet approve` takes; empty for a pause.
	Approval string `json:"approval,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	What     string `json:"what"`
}

// cliAPIVersion versions the documents the CLI prints itself (errors,
// promotion results); docs/schema/cli.schema.json describes them.
const cliAPIVersion = "cli.gpufleet.io/v1alpha1"

// waitingError is a refusal together with what the rollout waits for.
type waitingError struct {
	err     error
	waiting []promote.Waiting
	gate    *gate.Report
}

func (e *waitingError) Error() string { return e.err.Error() }
func (e *waitingError) Unwrap() error { return e.err }

// errorDocumentOf describes err for a machine format.
func errorDocumentOf(err error) ErrorDocument {
	code := exitCode(err)
	d := ErrorDocument{APIVersion: cliAPIVersion, Kind: "Error", ExitCode: code, Message: err.Error(),
		Reason: map[int]string{ExitFailed: "Failed", ExitUsage: "Usage", ExitUnknown: "Unknown"}[code]}
	if probs, ok := errors.AsType[fleet.Problems](err); ok {
		for _, p := range probs {
			d.Problems = append(d.Problems, ProblemDocument{File: p.File, Line: p.Line, Column: p.Column, Key: p.Key, Message: p.Message})
		}
	}
	if we, ok := errors.AsType[*waitingError](err); ok {
		d.Waiting, d.Gate = waitingDocuments(we.waiting), we.gate
	}
	return d
}

func waitingDocuments(ws []promote.Waiting) []WaitingDocument {
	out := []WaitingDocument{}
	for _, w := range ws {
		out = append(out, WaitingDocument{Approval: w.Approval, Cluster: w.Cluster, What: w.What})
	}
	return out
}

// requestedFormat is the -o the command line asked for: the parsed flag of
// the command that ran, or, when parsing failed before it (an unknown
// flag), what the arguments say.
func requestedFormat(cmd *cobra.Command, args []string) string {
	if cmd != nil {
		if fl := cmd.Flags().Lookup("output"); fl != nil && fl.Changed {
			return fl.Value.String()
		}
	}
	for i, a := range args {
		switch {
		case a == "--":
			return ""
		case (a == "-o" || a == "--output") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--output="):
			return strings.TrimPrefix(a, "--output=")
		case strings.HasPrefix(a, "-o") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			return strings.TrimPrefix(strings.TrimPrefix(a, "-o"), "=")
		}
	}
	return ""
}
