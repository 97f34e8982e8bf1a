package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

// promoteFlags are shared by the commands that edit [promotion].
type promoteFlags struct {
	fleetFile, kubeconfig, reason, output string
	skipGate, noCommit                    bool
	gateTimeout                           time.Duration
}

func (p *promoteFlags) register(cmd *cobra.Command, gated bool) {
	cmd.Flags().StringVarP(&p.fleetFile, "file", "f", "fleet.toml", "the fleet file (in a git repository)")
	cmd.Flags().BoolVar(&p.noCommit, "no-commit", false, "stage the change instead of committing it")
	cmd.Flags().StringVarP(&p.output, "output", "o", formatText, "text, json or yaml")
	if gated {
		cmd.Flags().StringVar(&p.kubeconfig, "kubeconfig", "", "kubeconfig for the gate (default: $KUBECONFIG or ~/.kube/config)")
		cmd.Flags().DurationVar(&p.gateTimeout, "gate-timeout", 30*time.Second, "time the gate allows per cluster")
		cmd.Flags().BoolVar(&p.skipGate, "skip-gate", false, "emergency only: promote without the gate (needs --reason)")
		cmd.Flags().StringVar(&p.reason, "reason", "", "why the gate is skipped; goes into the commit message")
	}
}

// validate checks the flags alone, before anything is read: a wrong command
// line is a usage error (exit 2), not a refused promotion (exit 1).
func (p *promoteFlags) validate() error {
	switch {
	case !slices.Contains([]string{formatText, formatJSON, formatYAML}, p.output):
		return fmt.Errorf("-o must be text, json or yaml, got %q", p.output)
	case p.skipGate && strings.TrimSpace(p.reason) == "":
		return errors.New(`--skip-gate needs --reason "why": the reason goes into the commit message`)
	case p.reason != "" && !p.skipGate:
		return errors.New("--reason goes with --skip-gate: it says why the gate was skipped")
	}
	return nil
}

func (p *promoteFlags) apply(ctx context.Context, s Streams, m promote.Mutation) error {
	if err := p.validate(); err != nil {
		return withCode(ExitUsage, err)
	}
	machine := machineFormat(p.output)
	var gateReport *gate.Report
	res, err := promote.Apply(ctx, promote.Options{
		FleetFile: p.fleetFile, Mutation: m,
		Gate: promote.RealGate(filepath.Dir(p.fleetFile), p.kubeconfig, p.gateTimeout, func(r *gate.Report) {
			if gateReport = r; !machine {
				printGate(s.Out, r)
			}
		}),
		Canary:   promote.RealCanary(p.kubeconfig, p.gateTimeout),
		SkipGate: p.skipGate, Reason: p.reason, NoCommit: p.noCommit,
		Render: fleetRenderOptions(ctx),
	})
	var probs fleet.Problems
	switch {
	case errors.As(err, &probs):
		return withCode(ExitFailed, fmt.Errorf("%d problem(s) in the fleet file:\n%w", len(probs), probs))
	case errors.Is(err, promote.ErrRefused):
		// Say what waits instead, so a script can offer it.
		if f, lerr := fleet.Load(p.fleetFile); lerr == nil {
			err = &waitingError{err: err, waiting: promote.Waits(f), gate: gateReport}
		}
		return withCode(ExitFailed, err)
	case err != nil:
		return withCode(ExitUnknown, err)
	}
	for _, w := range res.Step.Warnings {
		fmt.Fprintf(s.Err, "warning: %s\n", w)
	}
	var waits []promote.Waiting
	if f, err := fleet.Load(p.fleetFile); err == nil {
		waits = promote.Waits(f)
	}
	if machine {
		return writeDocument(s.Out, p.output, promotionResultOf(res, waits))
	}
	verb := "committed"
	if !res.Committed {
		verb = "staged (--no-commit)"
	}
	fmt.Fprintf(s.Out, "%s: %s\n", verb, strings.SplitN(res.Message, "\n", 2)[0])
	fmt.Fprintf(s.Out, "%d rendered file(s) changed\n", len(res.Changes))
	printRemovals(s.Out, "", res.Step.Removals)
	// Say what waits next, with the exact name to approve.
	for _, w := range waits {
		if w.Approval != "" {
			fmt.Fprintf(s.Out, "waiting for approval of %s: gpufleet approve %s\n", w.What, w.Approval)
		} else {
			fmt.Fprintf(s.Out, "waiting: %s\n", w.What)
		}
	}
	return nil
}

// PromotionResult is what a promotion command did, as -o json and -o yaml
// print it.
type PromotionResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Summary is the commit's subject; Message the whole commit message.
	Summary   string `json:"summary"`
	Message   string `json:"message"`
	Committed bool   `json:"committed"`
	// Changes are the rendered files that changed.
	Changes  []render.Change `json:"changes"`
	Warnings []string        `json:"warnings,omitempty"`
	// Removals are the operators the step took off clusters that ran them.
	Removals []promote.Removal `json:"removals,omitempty"`
	Waiting  []WaitingDocument `json:"waiting"`
}

func promotionResultOf(res *promote.Result, waits []promote.Waiting) PromotionResult {
	changes := res.Changes
	if changes == nil {
		changes = []render.Change{}
	}
	return PromotionResult{
		APIVersion: cliAPIVersion, Kind: "PromotionResult",
		Summary: strings.SplitN(res.Message, "\n", 2)[0], Message: res.Message, Committed: res.Committed,
		Changes: changes, Warnings: res.Step.Warnings, Removals: res.Step.Removals, Waiting: waitingDocuments(waits),
	}
}

// fleetRenderOptions renders as `gpufleet render` does with no --charts:
// in the manifests mode, from the fleet file's chart repository.
func fleetRenderOptions(ctx context.Context) func(*fleet.Fleet) (render.Options, error) {
	return func(f *fleet.Fleet) (render.Options, error) { return renderOptionsFor(ctx, f, "", false, nil) }
}

func newStartCommand(s Streams) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:   "start RELEASE",
		Short: "Begin rolling a release out at the first wave (one line of fleet.toml, one commit)",
		Long: `start adds the rollout line to [promotion], re-renders, and commits. The first
wave's clusters get RELEASE; every other cluster keeps the stable release.
Refused while another rollout is under way, while an abort is in force
(until promote ends it), or for an unknown release. A release older than the
stable one (any of its operators or its driver) is a downgrade: start warns,
and status never offers it. A release with network-operator = "none" takes
the Network Operator off the clusters it reaches: start says which; one that
leaves network-operator out while the stable release runs one is refused.`,
		Example: `  gpufleet start r2026-10
  gpufleet plan start r2026-10     # what it would change, first
  gpufleet start r2026-10 --no-commit -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleases,
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
  - after the last wave, the release becomes the stable one: the gate checks
    every cluster, since the previous driver's NVIDIADrivers go everywhere,
  - after an abort, the abort ends once the gate sees every cluster it
    reached back on the stable release.

Refused while paused. --skip-gate --reason "..." exists for emergencies; the
reason goes into the commit message. It is refused for the two steps that
stop rendering a driver (the release becoming stable, an abort ending):
only the gate can see that no node still runs it.`,
		Example: `  gpufleet promote
  gpufleet gate --wave prod-h100 --wait && gpufleet promote
  gpufleet promote --skip-gate --reason "INC-1234: staging API down, canary verified by hand"`,
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

  RELEASE/WAVE      entering a wave that requires approval, or the rest of a
                    wave after its canary cluster; each is used up by the
                    promote it lets through, so each is given when it waits
  RELEASE/CLUSTER   the canary node(s) of a cluster's DriverRollout, once
                    they have soaked: approve reads the cluster (through its
                    kubeconfig context) and refuses while they do not wait

A wave's approval never approves the canary nodes inside its clusters. A
wrong, stale or early name is refused with the list of what waits. Shell
completion offers exactly the names that wait now.`,
		Example: `  gpufleet approve r2026-10/prod-h100      # a wave: enter it, or go past its canary cluster
  gpufleet approve r2026-10/prod-h100-a    # a cluster: its canary node(s), once soaked
  gpufleet status                          # lists what waits, by name`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeApprovals,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.apply(cmd.Context(), s, func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, args[0]) })
		},
	}
	p.register(cmd, false)
	cmd.Flags().StringVar(&p.kubeconfig, "kubeconfig", "", "kubeconfig to read a cluster's DriverRollout with (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().DurationVar(&p.gateTimeout, "timeout", 30*time.Second, "time allowed to read the cluster")
	return cmd
}

// commandHelp is a command's long help and examples.
type commandHelp struct{ long, example string }

var (
	pauseHelp = commandHelp{`pause sets paused = true in [promotion], re-renders and commits. While paused,
promote and approve are refused, and the DriverRollout of every cluster the
rollout has reached gets spec.paused: the controller starts no new node, and
the nodes in flight finish their step. Nothing is rolled back. Refused when no
rollout is under way, or when it is paused already.

resume undoes it. plan pause shows the change without making it.`,
		`  gpufleet pause
  gpufleet pause --no-commit && git diff --cached
  gpufleet pause -o json`}
	resumeHelp = commandHelp{`resume sets paused = false in [promotion], re-renders and commits: the
clusters' DriverRollouts go on where they stopped, and promote and approve
are accepted again. Refused when the rollout is not paused.`,
		`  gpufleet resume
  gpufleet plan resume`}
	abortHelp = commandHelp{`abort stops the rollout under way and sends every cluster back to the stable
release, in one commit. The clusters it reached keep the aborted release's
DriverRollout, now with spec.abort (the schema makes that final), and both
drivers' NVIDIADrivers, so their upgraded nodes roll back to the stable
driver; the others simply stay on it.

The abort stays in force (rollout = { ..., aborted = true } in [promotion];
status lists the clusters still to come back, and start is refused) until
gpufleet promote ends it, which it does only once the gate sees every one of
those clusters back on the stable release. --skip-gate is refused for that
step: only the gate can see that no node still runs the aborted driver.`,
		`  gpufleet abort
  gpufleet status --live          # the clusters still coming back
  gpufleet promote                # ends the abort once the gate passes`}
)

func newSimpleMutationCommand(s Streams, use, short string, help commandHelp, m promote.Mutation) *cobra.Command {
	p := &promoteFlags{}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    help.long,
		Example: help.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return p.apply(cmd.Context(), s, m)
		},
	}
	p.register(cmd, false)
	return cmd
}

// statusOptions are the flags of `gpufleet status`.
type statusOptions struct {
	fleetFile, output, kubeconfig string
	live, watch                   bool
	timeout, interval             time.Duration
}

func newStatusCommand(s Streams) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [--live [--watch]] [-o table|json|yaml]",
		Short: "Show which release each cluster runs, what the rollout waits for, and the next command",
		Long: `status reads the fleet file (and nothing else, unless --live) and prints the
stable release, the rollout under way, each cluster's wave, release and state
(stable, rolling out, aborted and coming back), where each service of the
serving stack runs, what the rollout waits for (approvals by their exact
names, a pause) and the exact next command. A start that would be a downgrade
is never offered.

--live adds each cluster's gate result and its DriverRollout as it stands
(phase, nodes done, failure budget used), read through the kubeconfig
contexts. A cluster read but unhealthy is shown, not an error (gate judges);
one that could not be read is shown and makes status exit 3. --watch redraws
every --interval until Ctrl-C; gpufleet explain CLUSTER says why one is stuck.`,
		Example: `  gpufleet status
  gpufleet status --live
  gpufleet status --live --watch --interval 30s
  gpufleet status -o json | jq -r .next`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if o.watch {
				return o.watchStatus(cmd.Context(), s.Out)
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table, json or yaml")
	cmd.Flags().BoolVar(&o.live, "live", false, "add each cluster's gate result (connects to the clusters)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --live")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "time allowed per cluster with --live")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "with --live: look again every --interval and redraw, until Ctrl-C")
	cmd.Flags().DurationVar(&o.interval, "interval", 10*time.Second, "with --watch: time between looks")
	return cmd
}

func (o *statusOptions) validate() error {
	if o.watch && (!o.live || o.interval <= 0) {
		return withCode(ExitUsage, errors.New("--watch needs --live and a positive --interval"))
	}
	return checkFormat(o.output, formatTable, formatJSON, formatYAML)
}

// watchStatus redraws the status every interval until Ctrl-C, which ends
// it normally (exit 0), as kubectl get --watch does. On a terminal each
// look replaces the last; elsewhere (a log, a pipe) the looks follow one
// another, and with -o json or yaml each is one document.
func (o *statusOptions) watchStatus(ctx context.Context, out io.Writer) error {
	tty := isTerminal(out)
	for {
		var buf bytes.Buffer
		err := o.run(ctx, &buf)
		if ctx.Err() != nil {
			return nil
		}
		if tty && !machineFormat(o.output) {
			fmt.Fprint(out, "\x1b[H\x1b[2J")
		}
		if o.output == formatYAML && !tty {
			fmt.Fprintln(out, "---")
		}
		if _, werr := out.Write(buf.Bytes()); werr != nil {
			return werr
		}
		if err != nil && exitCode(err) != ExitUnknown {
			// Only a cluster that could not be read is worth another look.
			return err
		}
		if err != nil {
			fmt.Fprintf(out, "(incomplete: %v)\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// isTerminal says w is a terminal, where progress may be redrawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (o *statusOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	st, err := promote.StatusOptions{Fleet: f, Dir: filepath.Dir(o.fleetFile), Live: o.live, Kubeconfig: o.kubeconfig, Timeout: o.timeout, Now: time.Now}.Run(ctx)
	var unread *promote.UnreadError
	if err != nil && !errors.As(err, &unread) {
		return withCode(ExitUnknown, err)
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, st); err != nil {
			return err
		}
	} else {
		printStatus(out, st)
	}
	// A cluster whose live state could not be read leaves the status
	// incomplete: exit 3 (could not find out), after printing.
	if unread != nil {
		return withCode(ExitUnknown, unread)
	}
	return nil
}

func printStatus(out io.Writer, st *promote.Status) {
	fmt.Fprintf(out, "stable: %s\n", st.Stable)
	for _, n := range st.Notices {
		fmt.Fprintf(out, "notice: %s\n", n)
	}
	if st.Rollout != "" {
		fmt.Fprintf(out, "rollout: %s\n", st.Rollout)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "WAVE\tCLUSTER\tRELEASE\tSTATE"
	if st.Live {
		// ROLLOUT is the cluster's DriverRollout as it stands, so a rollout
		// that completed with nodes rolled back shows as such; ADOPTION
		// where the cluster stands in coming under gpufleet.
		header += "\tROLLOUT\tADOPTION\tGATE"
	}
	fmt.Fprintln(tw, header)
	for _, c := range st.Clusters {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", c.Wave, c.Cluster, c.Release, c.State)
		if st.Live {
			adoption := "-"
			if c.Adoption != nil {
				// Who runs the driver and how many GPU nodes are
				// under gpufleet: "clusterpolicy, 3/4 held".
				adoption = c.Adoption.String()
			}
			line += "\t" + cmp.Or(c.Lifecycle, "-") + "\t" + adoption + "\t" + c.Gate
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if len(st.Services) > 0 {
		// Where the serving stack runs: a service goes only where a pool
		// gives it what it asks for.
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVICE\tRUNS ON")
		for _, sp := range st.Services {
			fmt.Fprintf(tw, "%s\t%s\n", sp.Service, strings.Join(sp.Clusters, ", "))
		}
		tw.Flush()
	}
	fmt.Fprintln(out)
	for _, w := range st.Waiting {
		fmt.Fprintf(out, "waiting: %s\n", w)
	}
	fmt.Fprintf(out, "next: %s\n", st.Next)
}

// planOptions are the flags and arguments of `gpufleet plan`.
type planOptions struct {
	fleetFile, output string
	args              []string

	mutation promote.Mutation
}

func newPlanCommand(s Streams) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan COMMAND [ARGS]",
		Short: "Show what a promotion command would change, without writing anything",
		Long: `plan computes what start, promote, approve, pause, resume or abort would do:
the lines of fleet.toml, per cluster the rendered objects that change (e.g.
HelmRelease gpu-operator v25.3.4 → v25.10.1), and a unified diff of each
changed object, as kubectl diff shows it (objects added or removed are
named; -o json has their whole text), and each operator the step takes off
clusters that run it ("removal:"; -o json: removals). The gate is not run.`,
		Example: `  gpufleet plan start r2026-10
  gpufleet plan promote
  gpufleet plan approve r2026-10/prod-h100`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completePlan,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table, json or yaml")
	return cmd
}

// validate checks the command line alone: a bad -o or an unknown or
// ill-formed command is a usage error, before the fleet file is read.
func (o *planOptions) validate() error {
	if err := checkFormat(o.output, formatTable, formatJSON, formatYAML); err != nil {
		return err
	}
	m, err := mutationFor(o.args)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	o.mutation = m
	return nil
}

func (o *planOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	// A refused step (promote.ErrRefused) and one that cannot be rendered
	// both fail the plan.
	p, err := promote.MakePlan(f, o.mutation, fleetRenderOptions(ctx))
	if err != nil {
		return withCode(ExitFailed, err)
	}
	if machineFormat(o.output) {
		return writeDocument(out, o.output, p)
	}
	printPlan(out, f, p)
	return nil
}

func printPlan(out io.Writer, f *fleet.Fleet, p *promote.Plan) {
	fmt.Fprintf(out, "%s\n\nfleet.toml:\n", p.Summary)
	for _, l := range p.FleetLines {
		fmt.Fprintf(out, "  %s\n", l)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(out, "\nwarning: %s\n", w)
	}
	printRemovals(out, "\n", p.Removals)
	if len(p.Gate) > 0 {
		fmt.Fprintf(out, "\ngate first: %s\n", strings.Join(p.Gate, ", "))
	}
	if p.GateRequired != "" {
		fmt.Fprintf(out, "--skip-gate refused: %s\n", p.GateRequired)
	}
	if p.Canary != "" {
		fmt.Fprintf(out, "\nchecks first, on the cluster, that the canary node(s) of %s wait for approval\n", p.Canary)
	}
	for _, c := range f.ClusterNames() {
		if changes := p.Clusters[c]; len(changes) > 0 {
			fmt.Fprintf(out, "\ncluster %s:\n", c)
			for _, ch := range changes {
				fmt.Fprintf(out, "  %s\n", ch)
			}
		}
	}
	printObjectDiffs(out, p.Diffs)
}

// printRemovals says each operator a step takes off clusters, one line
// each after sep, in the words of the commit message: plan, start and
// promote (and abort) print the same sentence.
func printRemovals(out io.Writer, sep string, removals []promote.Removal) {
	for _, r := range removals {
		fmt.Fprintf(out, "%sremoval: %s\n", sep, r.Message)
	}
}

// printObjectDiffs shows each changed object's unified diff, and names the
// objects added or removed (their whole text would bury the changes).
func printObjectDiffs(out io.Writer, diffs []promote.ObjectDiff) {
	for _, d := range diffs {
		ref := d.Kind + " " + d.Name
		switch {
		case d.Name == "":
			// kustomize's own kustomization.yaml has no name.
			ref = d.Kind + " " + d.Path
		case d.Namespace != "":
			ref = d.Kind + " " + d.Namespace + "/" + d.Name
		}
		switch d.Action {
		case render.ActionAdd:
			fmt.Fprintf(out, "\n+ %s (%s)\n", ref, d.Path)
		case render.ActionRemove:
			fmt.Fprintf(out, "\n- %s (%s)\n", ref, d.Path)
		default:
			fmt.Fprintf(out, "\n~ %s\n%s", ref, d.Diff)
		}
	}
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
