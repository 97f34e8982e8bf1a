package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/cli"
)

// Main runs gpufleet-lab with args and returns the process exit code;
// Ctrl-C (or SIGTERM) cancels the command, which stops what it started.
func Main(args []string, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, out, errOut)
}

// Run executes one command line and returns the exit code.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := NewRootCommand(out, errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cli.ExitOK
	}
	fmt.Fprintf(errOut, "gpufleet-lab: %v\n", err)
	var e *cli.ExitError
	switch {
	case errors.As(err, &e):
		return e.Code
	case isUsageError(err):
		return cli.ExitUsage
	}
	return cli.ExitFailed
}

// NewRootCommand builds the gpufleet-lab command tree.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpufleet-lab",
		Short: "Play gpufleet's story on a local testbed (for trying gpufleet out; not for a real fleet)",
		Long: `gpufleet-lab runs gpufleet against a local testbed: real kube-apiservers,
etcd, Flux and a git server, the lifecycle controller and simulated GPU nodes.
It carries the testbed, so it is a separate binary from gpufleet.

Exit codes: 0 ok, 1 a step failed, 2 bad command line, 3 could not start.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withCode(cli.ExitUsage, err)
	})
	root.AddCommand(newDemoCommand(out))
	return root
}

// withCode wraps err so that Run exits with code. A nil err stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &cli.ExitError{Code: code, Err: err}
}

// isUsageError recognises the command-line errors cobra returns as plain
// errors (an unknown command, a wrong number of arguments).
func isUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.Contains(msg, "arg(s)") || strings.HasPrefix(msg, "unknown flag")
}
