package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

// promoteFlags are shared by the commands that edit [promotion].
type promoteFlags struct {
	fleetFile, kubeconfig, reason string
	skipGate, noCommit            bool
	gateTimeout                   time.Duration
}

func (p *promoteFlags) register(cmd *cobra.Command, gated bool) {
	cmd.Flags().StringVarP(&p.fleetFile, "file", "f", "fleet.toml", "the fleet file (in a git repository)")
	cmd.Flags().BoolVar(&p.noCommit, "no-commit", false, "stage the change instead of committing it")
	if gated {
		cmd.Flags().StringVar(&p.kubeconfig, "kubeconfig", "", "kubeconfig for the gate (default: $KUBECONFIG or ~/.kube/config)")
		cmd.Flags().DurationVar(&p.gateTimeout, "gate-timeout", 30*time.Second, "time the gate allows per cluster")
		cmd.Flags().BoolVar(&p.skipGate, "skip-gate", false, "emergency only: promote without the gate (needs --reason)")
		cmd.Flags().StringVar(&p.reason, "reason", "", "why the gate is skipped; goes into the commit message")
	}
}

func (p *promoteFlags) apply(ctx context.Context, s Streams, m promote.Mutation) error {
	res, err := promote.Apply(ctx, promote.Options{
		FleetFile: p.fleetFile, Mutation: m,
		Gate:     promote.RealGate(filepath.Dir(p.fleetFile), p.kubeconfig, p.gateTimeout, func(r *gate.Report) { printGate(s.Out, r) }),
		SkipGate: p.skipGate, Reason: p.reason, NoCommit: p.noCommit,
		Render: fleetRenderOptions(ctx),
	})
	var probs fleet.Problems
	switch {
	case errors.As(err, &probs):
		return withCode(ExitFailed, fmt.Errorf("%d problem(s) in the fleet file:\n%w", len(probs), probs))
	case errors.Is(err, promote.ErrRefused):
		return withCode(ExitFailed, err)
	case err != nil:
		return withCode(ExitUnknown, err)
	}
	verb := "committed"
	if !res.Committed {
		verb = "staged (--no-commit)"
	}
	fmt.Fprintf(s.Out, "%s: %s\n", verb, strings.SplitN(res.Message, "\n", 2)[0])
	fmt.Fprintf(s.Out, "%d rendered file(s) changed\n", len(res.Changes))
	// Say what waits next, with the exact name to approve.
	if f, err := fleet.Load(p.fleetFile); err == nil {
		for _, w := range promote.Waits(f) {
			if w.Approval != "" {
				fmt.Fprintf(s.Out, "waiting for approval of %s: gpufleet approve %s\n", w.What, w.Approval)
			} else {
				fmt.Fprintf(s.Out, "waiting: %s\n", w.What)
			}
		}
	}
	return nil
}

// fleetRenderOptions renders as `gpufleet render` does with no --charts:
// in the manifests mode, from the fleet file's chart repository.
func fleetRenderOptions(ctx context.Context) func(*fleet.Fleet) (render.Options, error) {
	return func(f *fleet.Fleet) (render.Options, error) { return renderOptionsFor(ctx, f, "") }
}

func newStartCommand(s Streams) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:   "start RELEASE",
		Short: "Begin rolling a release out at the first wave (one line of fleet.toml, one commit)",
		Long: `start adds the rollout line to [promotion], re-renders, and commits. The first
wave's clusters get RELEASE; every other cluster keeps the stable release.
Refused while another rollout is under way, or for an unknown release.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.apply(cmd.Context(), s, func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, args[0]) })
		},
	}
	p.register(cmd, false)
	return cmd
}

func newPromoteCommand(s Streams) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Move the rollout one step, once the gate passes for where it is",
		Long: `promote runs the gate on the clusters the rollout has reached in its current
wave; when it passes it moves the rollout one step and commits:

  - from a wave's canary cluster to the whole wave (after approval),
  - to the next wave (its canary cluster alone when it pauses after the canary;
    a wave that requires approval and has no canary waits for approval first),
  - after the last wave, the release becomes the stable one.

Refused while paused. --skip-gate --reason "..." exists for emergencies; the
reason goes into the commit message.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return p.apply(cmd.Context(), s, promote.Promote)
		},
	}
	p.register(cmd, true)
	return cmd
}

func newApproveCommand(s Streams) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve exactly what waits, by its name (e.g. r2026-10/prod-h100)",
		Long: `approve adds NAME to [promotion].approved and commits; the commit's author is
who approved. NAME must be exactly the name of something waiting, as promote
and status print it:

  RELEASE/WAVE      the whole of a wave (after its canary cluster, or to enter it)
  RELEASE/CLUSTER   the canary node(s) of a cluster's DriverRollout

A wrong or stale name is refused with the list of what waits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.apply(cmd.Context(), s, func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, args[0]) })
		},
	}
	p.register(cmd, false)
	return cmd
}

func newSimpleMutationCommand(s Streams, use, short string, m promote.Mutation) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return p.apply(cmd.Context(), s, m)
		},
	}
	p.register(cmd, false)
	return cmd
}

func newStatusCommand(s Streams) *cobra.Command {
	var fleetFile, output, kubeconfig string
	var live bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status [--live]",
		Short: "Show which release each cluster runs, what the rollout waits for, and the next command",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadFleet(fleetFile)
			if err != nil {
				return err
			}
			st := promote.StatusOf(f)
			if live {
				rev, err := gate.HeadRevision(filepath.Dir(fleetFile))
				if err != nil {
					return withCode(ExitUnknown, err)
				}
				rep := gate.Run(cmd.Context(), gate.Options{Fleet: f, Clusters: f.ClusterNames(), Revision: rev, Kubeconfig: kubeconfig, Timeout: timeout, Now: time.Now})
				st.AddGate(rep)
			}
			if output == "json" {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(s.Out, st)
			return nil
		},
	}
	cmd.Flags().StringVarP(&fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().BoolVar(&live, "live", false, "add each cluster's gate result (connects to the clusters)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for --live")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "time allowed per cluster with --live")
	return cmd
}

func printStatus(out io.Writer, st *promote.Status) {
	fmt.Fprintf(out, "stable: %s\n", st.Stable)
	if st.Rollout != "" {
		fmt.Fprintf(out, "rollout: %s\n", st.Rollout)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "WAVE\tCLUSTER\tRELEASE\tSTATE"
	if st.Live {
		header += "\tGATE"
	}
	fmt.Fprintln(tw, header)
	for _, c := range st.Clusters {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", c.Wave, c.Cluster, c.Release, c.State)
		if st.Live {
			line += "\t" + c.Gate
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, w := range st.Waiting {
		fmt.Fprintf(out, "waiting: %s\n", w)
	}
	fmt.Fprintf(out, "next: %s\n", st.Next)
}

func newPlanCommand(s Streams) *cobra.Command {
	var fleetFile, output string
	cmd := &cobra.Command{
		Use:   "plan COMMAND [ARGS]",
		Short: "Show what a promotion command would change, without writing anything",
		Long: `plan computes what start, promote, approve, pause, resume or abort would do:
the lines of fleet.toml, and per cluster the rendered objects that change
(e.g. HelmRelease gpu-operator v25.3.4 → v25.10.1). The gate is not run.`,
		Example: `  gpufleet plan start r2026-10
  gpufleet plan promote
  gpufleet plan approve r2026-10/prod-h100`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := mutationFor(args)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			f, err := loadFleet(fleetFile)
			if err != nil {
				return err
			}
			p, err := promote.MakePlan(f, m, fleetRenderOptions(cmd.Context()))
			if err != nil {
				if errors.Is(err, promote.ErrRefused) {
					return withCode(ExitFailed, err)
				}
				return withCode(ExitFailed, err)
			}
			if output == "json" {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			fmt.Fprintf(s.Out, "%s\n\nfleet.toml:\n", p.Summary)
			for _, l := range p.FleetLines {
				fmt.Fprintf(s.Out, "  %s\n", l)
			}
			if len(p.Gate) > 0 {
				fmt.Fprintf(s.Out, "\ngate first: %s\n", strings.Join(p.Gate, ", "))
			}
			for _, c := range f.ClusterNames() {
				if changes := p.Clusters[c]; len(changes) > 0 {
					fmt.Fprintf(s.Out, "\ncluster %s:\n", c)
					for _, ch := range changes {
						fmt.Fprintf(s.Out, "  %s\n", ch)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func mutationFor(args []string) (promote.Mutation, error) {
	want := func(n int) error {
		if len(args) != n+1 {
			return fmt.Errorf("plan %s takes %d argument(s)", args[0], n)
		}
		return nil
	}
	switch args[0] {
	case "start":
		if err := want(1); err != nil {
			return nil, err
		}
		return func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, args[1]) }, nil
	case "approve":
		if err := want(1); err != nil {
			return nil, err
		}
		return func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, args[1]) }, nil
	case "promote", "pause", "resume", "abort":
		if err := want(0); err != nil {
			return nil, err
		}
		return map[string]promote.Mutation{"promote": promote.Promote, "pause": promote.Pause, "resume": promote.Resume, "abort": promote.Abort}[args[0]], nil
	}
	return nil, fmt.Errorf("plan: unknown command %q (start, promote, approve, pause, resume, abort)", args[0])
}
