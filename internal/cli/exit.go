package cli

import (
	"errors"
	"fmt"
)

// Exit codes. They are part of gpufleet's interface: scripts and CI rely on them.
const (
	// ExitOK means the command did what was asked, or found nothing wrong.
	ExitOK = 0
	// ExitFailed means the command ran and found a problem: invalid input,
	// a failed check, output that is not up to date.
	ExitFailed = 1
	// ExitUsage means the command line itself was wrong.
	ExitUsage = 2
	// ExitUnknown means the command could not find out: a cluster was
	// unreachable, a file could not be read, a timeout passed. Fail closed.
	ExitUnknown = 3
)

// ExitError carries an exit code with the error that caused it.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// withCode wraps err so that Main exits with code. A nil err stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// silentFailure is returned by commands that already printed their findings:
// Main exits with the code but prints nothing more.
type silentFailure struct{ code int }

func (s silentFailure) Error() string { return fmt.Sprintf("exit status %d", s.code) }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if s, ok := errors.AsType[silentFailure](err); ok {
		return s.code
	}
	if e, ok := errors.AsType[*ExitError](err); ok {
		return e.Code
	}
	return ExitFailed
}
