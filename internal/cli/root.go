package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/internal/cilog"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// Streams are the command's standard input and outputs, passed explicitly so
// tests can capture them.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Main runs gpufleet with args and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go exitOnSecondSignal(ctx, errOut)
	// Every command says what its reads found in its own output; without a
	// logger controller-runtime prints a stack trace, 30 s into a long
	// gate --wait or explain, only to say that none was set.
	ctrllog.SetLogger(logr.Discard())
	// Libraries log on the standard logger (Helm names each symbolic link
	// it follows in a chart, a name the repository chose): its lines are
	// made inert like every other line gpufleet prints (see Run).
	log.SetOutput(inert(errOut))
	return Run(ctx, args, Streams{In: in, Out: out, Err: errOut})
}

// exitOnSecondSignal: the first Ctrl-C cancels the command's context so it
// can stop cleanly; a second one, once that is under way, ends the process
// as a shell expects (exit 130).
func exitOnSecondSignal(ctx context.Context, errOut io.Writer) {
	<-ctx.Done()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	<-again
	fmt.Fprintln(errOut, "gpufleet: interrupted twice: stopping now")
	os.Exit(130)
}

// Run executes one command line against streams and returns the exit code.
//
// Every line a command prints, on both streams, is made inert for the CI
// system that may show it (package cilog): names and messages from a
// fleet repository's change must not read as workflow commands in the
// job's log. A terminal is left as it is (its progress lines redraw).
func Run(ctx context.Context, args []string, s Streams) int {
	out, errOut := inert(s.Out), inert(s.Err)
	defer flush(out, errOut)
	s = Streams{In: s.In, Out: out, Err: errOut}
	root := NewRootCommand(s)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && isUsageError(err) {
		err = withCode(ExitUsage, err)
	}
	if err != nil {
		if _, ok := errors.AsType[silentFailure](err); !ok {
			// With -o json or yaml a script reads stdout: the error comes
			// there, in that format, with the same exit code.
			if format := requestedFormat(cmd, args); machineFormat(format) && writeDocument(s.Out, format, errorDocumentOf(err)) == nil {
				return exitCode(err)
			}
			fmt.Fprintf(s.Err, "gpufleet: %v\n", err)
		}
	}
	return exitCode(err)
}

// inert wraps w in a cilog.Writer, unless it is a terminal.
func inert(w io.Writer) io.Writer {
	if w == nil || isTerminal(w) {
		return w
	}
	return cilog.NewWriter(w)
}

// flush writes what the cilog.Writers among ws hold.
func flush(ws ...io.Writer) {
	for _, w := range ws {
		if cw, ok := w.(*cilog.Writer); ok {
			_ = cw.Flush()
		}
	}
}

// isUsageError recognises the command-line errors cobra returns as plain
// errors (an unknown command, a wrong number of arguments).
func isUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.Contains(msg, "arg(s), received") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "required flag")
}

// NewRootCommand builds the gpufleet command tree.
func NewRootCommand(s Streams) *cobra.Command {
	version := buildVersion()
	root := &cobra.Command{
		Use:     "gpufleet",
		Version: version.shortVersion(),
		Short:   "Upgrade the GPU software stack across a fleet of Kubernetes clusters, from Git, with Flux or Argo CD",
		Long: `gpufleet upgrades NVIDIA GPU Operator, Network Operator and GPU driver releases
across a fleet of Kubernetes clusters. One file, fleet.toml, says which releases
exist and which clusters run what; gpufleet renders every cluster's Flux or Argo CD folder
from it, and rolls drivers out wave by wave.

Exit codes: 0 ok, 1 a problem was found (invalid input, failed check),
2 bad command line, 3 could not check (unreachable, unreadable, timeout).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withCode(ExitUsage, err)
	})
	root.SetVersionTemplate("gpufleet {{.Version}}\n")

	root.AddCommand(newInitCommand(s))
	root.AddCommand(newRenderCommand(s), newBootstrapCommand(s))
	root.AddCommand(newLintCommand(s))
	root.AddCommand(newSecretCommand(s))
	root.AddCommand(newGateCommand(s))
	root.AddCommand(newStartCommand(s), newPromoteCommand(s), newApproveCommand(s),
		newSimpleMutationCommand(s, "pause", "Pause the rollout: no promotion or approval; in-cluster rollouts of clusters in progress pause", pauseHelp, promote.Pause),
		newSimpleMutationCommand(s, "resume", "Resume a paused rollout", resumeHelp, promote.Resume),
		newSimpleMutationCommand(s, "abort", "Abort the rollout: every cluster returns to the stable release, upgraded nodes roll back", abortHelp, promote.Abort),
		newStatusCommand(s), newPlanCommand(s))
	root.AddCommand(newSimulateCommand(s))
	root.AddCommand(newValidateCommand(s))
	root.AddCommand(newCRDDiffCommand(s))
	root.AddCommand(newExplainCommand(s), newVersionCommand(s))
	root.AddCommand(newDashboardCommand(s))
	root.AddCommand(newVerifyCommand(s))
	argsAreUsage(root)
	return root
}

// argsAreUsage makes a wrong number or kind of arguments a usage error
// (exit 2) for every command: cobra returns its argument checks as plain
// errors whose wording differs by check ("accepts 1 arg(s), received 0",
// "requires at least 1 arg(s), only received 0"), so matching the text
// misses some and they exit 1, as if a problem had been found.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			return withCode(ExitUsage, check(cmd, args))
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}
