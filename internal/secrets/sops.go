package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// EnvSOPS names the environment variable that points at the sops program
// when the --sops flag does not.
const EnvSOPS = "GPUFLEET_SOPS"

// InstallHint says how to get sops; it ends every "not found" error.
const InstallHint = "gpufleet leaves SOPS encryption to the sops program, as the Flux CLI does: " +
	"install sops v3.9 or newer (tested with v3.13.3) with your package manager (brew install sops), " +
	"from a release of getsops/sops, or with " +
	"go install github.com/getsops/sops/v3/cmd/sops@v3.13.3; then put it on PATH, " +
	"set " + EnvSOPS + " or pass --sops"

// ErrNotFound is wrapped by the error [Find] returns when there is no sops
// program to run.
var ErrNotFound = errors.New("sops not found")

// ErrStart is wrapped by the error of a sops run that never started (the
// program vanished, or is not one this machine runs).
var ErrStart = errors.New("could not start sops")

// SOPS runs one sops program.
type SOPS struct {
	// Path is the program, as exec.Command takes it.
	Path string
}

// Find locates sops: path when it is not empty (the --sops flag), else
// $GPUFLEET_SOPS, else "sops" on PATH. It checks only that the file is an
// executable; a sops too old for the "encrypt" and "decrypt" commands
// (before v3.9) fails on first use with its own message.
func Find(path string) (*SOPS, error) {
	from := "--sops"
	if path == "" {
		path, from = os.Getenv(EnvSOPS), EnvSOPS
	}
	if path == "" {
		p, err := exec.LookPath("sops")
		if err != nil {
			return nil, fmt.Errorf("%w on PATH: %s", ErrNotFound, InstallHint)
		}
		return &SOPS{Path: p}, nil
	}
	// LookPath on a name with a slash checks that the file is executable;
	// a bare name is looked up on PATH, like the shell does.
	p, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s=%s: %v: %s", ErrNotFound, from, path, err, InstallHint)
	}
	return &SOPS{Path: p}, nil
}

// Error is a sops run that failed: its arguments (never a secret), exit
// status and standard error, passed on as sops wrote it.
type Error struct {
	Command  string
	ExitCode int
	Stderr   string
	// Hint explains exit statuses that have a likely cause in gpufleet's
	// terms; empty for the others.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sops %s: exit status %d", e.Command, e.ExitCode)
	if e.Hint != "" {
		b.WriteString(": " + e.Hint)
	}
	if e.Stderr != "" {
		b.WriteString("\nsops said:\n" + e.Stderr)
	}
	return b.String()
}

// Exit statuses of sops (its cmd/sops/codes package) that get a hint.
const (
	sopsMacMismatch         = 51
	sopsCouldNotRetrieveKey = 128
	sopsFileAlreadyEnc      = 203
)

func hintFor(code int) string {
	switch code {
	case sopsMacMismatch:
		return "MAC mismatch: the file was changed after it was encrypted"
	case sopsCouldNotRetrieveKey:
		return "no age identity given opens this file: set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY to the environment's private key"
	case sopsFileAlreadyEnc:
		return "the input is already SOPS-encrypted"
	}
	return ""
}

// run runs "sops COMMAND ARGS..." with stdin as its standard input and env
// added to an environment from which every SOPS_ variable is removed: a
// SOPS_PGP_FP or SOPS_KMS_ARN in the user's shell would otherwise add keys
// to every file gpufleet encrypts, and a SOPS_AGE_KEY_CMD would run.
// --config /dev/null keeps a .sops.yaml above the working folder from
// applying its creation rules and store settings: gpufleet passes the
// recipients and what to encrypt itself.
func (s *SOPS) run(ctx context.Context, stdin []byte, env []string, command string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.Path, append([]string{"--config", os.DevNull, command}, args...)...)
	cmd.Env = append(withoutSOPS(os.Environ()), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code := exit.ExitCode()
		return nil, &Error{Command: command, ExitCode: code, Stderr: strings.TrimSpace(stderr.String()), Hint: hintFor(code)}
	case err != nil:
		return nil, fmt.Errorf("%w %s: %w", ErrStart, s.Path, err)
	}
	return stdout.Bytes(), nil
}

func withoutSOPS(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SOPS_") {
			out = append(out, kv)
		}
	}
	return out
}
