package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/api/v1alpha1"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/sim"
)

type simulateOptions struct {
	fleetFile string
	cluster   string
	release   string
	nodes     int
	seed      uint64
	failRate  float64
	xidRate   float64
	start     string
	svg       string
	output    string
	verbose   bool

	startTime time.Time
	// failRateSet: --fail-rate was given; otherwise a release marked
	// expect-failure (a drill) fails every install.
	failRateSet bool
}

func newSimulateCommand(s Streams) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate [-f fleet.toml] [--cluster C] [--nodes N] [--seed S]",
		Short: "Rehearse a cluster's node rollout policy on a simulated fleet",
		Long: `simulate runs the lifecycle controller's planner against a simulated cluster,
with time compressed, and reports what a platform lead wants to know before a
change window: how long the driver rollout takes, how close that is to the
shortest rollout the policy allows, how many nodes end done, rolled back or
quarantined, whether the failure budget held, and when maintenance windows,
freezes or the wait for approval held it.

The policy is the cluster's resolved node rollout policy; the nodes are the
cluster's GPU pools (or --nodes). The rollout is the DriverRollout render writes
for the cluster once the release reaches it: --release, else the release being
rolled out (with none, simulate says what to pass). The approval is assumed to
be given as soon as the rollout asks for it. Drain, install and report times are drawn
from plausible distributions with --seed; --fail-rate and --xid-rate inject
install failures and XID errors (a release marked expect-failure fails every
install unless --fail-rate says otherwise).

Without --cluster every cluster is rehearsed. --svg writes a timeline picture:
one row per node, coloured by phase, with the times nodes may start shaded.`,
		Example: `  gpufleet simulate -f fleet.toml --cluster prod-h100-b
  gpufleet simulate --cluster prod-h100-b --nodes 500 --fail-rate 0.01 --svg rollout.svg
  gpufleet simulate -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.failRateSet = cmd.Flags().Changed("fail-rate")
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	f.StringVar(&o.cluster, "cluster", "", "the cluster to rehearse (default: every cluster)")
	f.StringVar(&o.release, "release", "", "rehearse moving to this release (default: the one being rolled out)")
	f.IntVar(&o.nodes, "nodes", 0, "simulate this many GPU nodes instead of the cluster's pools")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random durations and failures")
	f.Float64Var(&o.failRate, "fail-rate", 0, "chance that the new driver fails to install on a node (0-1)")
	f.Float64Var(&o.xidRate, "xid-rate", 0, "chance that a node raises an XID during its soak (0-1)")
	f.StringVar(&o.start, "start", "", "when the rollout starts, RFC 3339 (default: now)")
	f.StringVar(&o.svg, "svg", "", "write a timeline picture to this file (one cluster only)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also print every transition with its reason")
	return cmd
}

func (o *simulateOptions) validate() error {
	var errs []error
	if o.output != "table" && o.output != "json" {
		errs = append(errs, fmt.Errorf("-o must be table or json, got %q", o.output))
	}
	if o.nodes < 0 || o.nodes > 100000 {
		errs = append(errs, fmt.Errorf("--nodes must be between 1 and 100000, got %d", o.nodes))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"--fail-rate", o.failRate}, {"--xid-rate", o.xidRate}} {
		if r.v < 0 || r.v > 1 {
			errs = append(errs, fmt.Errorf("%s must be between 0 and 1, got %g", r.name, r.v))
		}
	}
	o.startTime = time.Now().UTC().Truncate(time.Minute)
	if o.start != "" {
		t, err := time.Parse(time.RFC3339, o.start)
		if err != nil {
			errs = append(errs, fmt.Errorf("--start: %w", err))
		}
		o.startTime = t
	}
	return errors.Join(errs...)
}

// rehearsal is one cluster's simulated rollout.
type rehearsal struct {
	Cluster string `json:"cluster"`
	// Rollout is the name of the DriverRollout rehearsed, as render writes it.
	Rollout  string      `json:"rollout"`
	Previous string      `json:"previousDriver"`
	Target   string      `json:"targetDriver"`
	Policy   string      `json:"policy"`
	Report   sim.Report  `json:"report"`
	result   *sim.Result `json:"-"`
	rollout  *v1alpha1.DriverRollout
	calendar planner.Calendar `json:"-"`
}

func (o *simulateOptions) run(_ context.Context, out io.Writer) error {
	f, err := loadFleet(o.fleetFile)
	if err != nil {
		return err
	}
	clusters := f.ClusterNames()
	if o.cluster != "" {
		if _, ok := f.Clusters[o.cluster]; !ok {
			return withCode(ExitUsage, fmt.Errorf("no cluster %q in %s (clusters: %s)", o.cluster, o.fleetFile, strings.Join(clusters, ", ")))
		}
		clusters = []string{o.cluster}
	}
	if o.release != "" && f.Releases[o.release] == nil {
		return withCode(ExitUsage, fmt.Errorf("no release %q in %s (releases: %s)", o.release, o.fleetFile, strings.Join(f.ReleaseNames(), ", ")))
	}
	if o.svg != "" && len(clusters) != 1 {
		return withCode(ExitUsage, fmt.Errorf("--svg draws one cluster: add --cluster (one of %s)", strings.Join(clusters, ", ")))
	}
	release, err := rehearsedRelease(f, o.release)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	var all []rehearsal
	for _, c := range clusters {
		r, err := o.rehearse(f, c, release)
		if err != nil {
			return withCode(ExitFailed, fmt.Errorf("simulate %s: %w", c, err))
		}
		all = append(all, r)
	}
	if o.svg != "" {
		if err := writeSVG(o.svg, all[0]); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return err
		}
	} else {
		for i, r := range all {
			if i > 0 {
				fmt.Fprintln(out)
			}
			printRehearsal(out, r)
			if o.verbose {
				fmt.Fprintln(out)
				fmt.Fprint(out, r.result.TranscriptText())
			}
		}
	}
	return unfinished(all)
}

// unfinished fails a rehearsal that never got to its end: still waiting
// for a window or a freeze when the simulation stopped. Reporting it as a
// success would promise a rollout that the calendar does not allow.
func unfinished(all []rehearsal) error {
	var errs []error
	for _, r := range all {
		if r.result.HitHorizon || r.Report.Outcome == v1alpha1.PhaseOutsideWindow {
			errs = append(errs, fmt.Errorf("%s: the rollout did not finish: %s", r.Cluster, r.Report.Reason))
		}
	}
	if len(errs) > 0 {
		return withCode(ExitFailed, errors.Join(errs...))
	}
	return nil
}

// rehearse simulates cluster's rollout under its policy: the very
// DriverRollout render writes for the cluster once the release reaches it
// (render.DriverRollout), over nodes labelled as GPU Feature Discovery
// labels them, so that its node selector picks them as it would.
func (o *simulateOptions) rehearse(f *fleet.Fleet, cluster, release string) (rehearsal, error) {
	p := f.PolicyFor(cluster)
	ro, err := render.DriverRollout(f, cluster, release)
	if err != nil {
		return rehearsal{}, err
	}
	target, previous := ro.Spec.TargetVersion, ro.Spec.PreviousVersion
	drill := f.Releases[release].ExpectFailure
	if previous == "" {
		// Nothing to move from in the file: rehearse a reinstall.
		previous = target
	}

	var nodes []planner.Node
	if o.nodes > 0 {
		nodes = sim.Nodes(o.nodes, "gpu", gpuNodeLabels(f.Clusters[cluster], nil), previous)
	} else {
		for _, pool := range f.Clusters[cluster].Pools {
			nodes = append(nodes, sim.Nodes(pool.Nodes, pool.Name, gpuNodeLabels(f.Clusters[cluster], pool), previous)...)
		}
	}
	if len(nodes) == 0 {
		return rehearsal{}, errors.New("the cluster has no GPU nodes: give --nodes")
	}
	prof := sim.DefaultProfile()
	prof.InstallFailRate, prof.XIDRate = o.failRate, o.xidRate
	if drill && !o.failRateSet {
		prof.InstallFailRate = 1
	}
	res, err := sim.Run(sim.Config{
		Rollout: ro, Nodes: nodes, Start: o.startTime, Seed: o.seed, Profile: prof,
		Record: o.svg != "" || o.verbose, Tick: time.Minute,
		// The rehearsal measures the machinery, not how long a person
		// takes: the approval `gpufleet approve` writes comes as soon as
		// the rollout asks for it.
		ApproveWhenAsked: true,
	})
	if err != nil {
		return rehearsal{}, err
	}
	return rehearsal{
		Cluster: cluster, Rollout: ro.Name, Previous: previous, Target: target, Policy: describePolicy(p),
		Report: sim.Summarise(ro, res), result: res, rollout: ro, calendar: planner.NewCalendar(&ro.Spec),
	}, nil
}

// gpuNodeLabels are the labels a node of pool carries in a real cluster:
// those GPU Feature Discovery sets and the pool label render selects by.
// A nil pool is a node of --nodes: the cluster's first pool's product.
func gpuNodeLabels(c *fleet.Cluster, pool *fleet.Pool) map[string]string {
	l := map[string]string{render.LabelGPUPresent: "true"}
	if pool == nil && len(c.Pools) > 0 {
		pool = c.Pools[0]
	}
	if pool != nil {
		l[render.LabelGPUProduct] = pool.Product
		l[render.LabelPool] = pool.Name
	}
	return l
}

// rehearsedRelease is the release simulate rehearses when --release is not
// given: the one being rolled out. With none, it refuses and says what to
// pass: rehearsing the stable release onto itself shows nothing.
func rehearsedRelease(f *fleet.Fleet, release string) (string, error) {
	if release != "" {
		return release, nil
	}
	if r := f.Promotion.Rollout; r != nil && !r.Aborted && f.Releases[r.Release] != nil {
		return r.Release, nil
	}
	var candidates []string
	for _, r := range f.ReleaseNames() {
		if r != f.Promotion.Stable {
			candidates = append(candidates, r)
		}
	}
	why := "no release is being rolled out"
	if r := f.Promotion.Rollout; r != nil && r.Aborted {
		why = "the rollout of " + r.Release + " is aborted"
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("%s, and the fleet file has no release but the stable %s: add one, or pass --release %s to rehearse a reinstall", why, f.Promotion.Stable, f.Promotion.Stable)
	}
	return "", fmt.Errorf("%s: pass --release (one of %s) to say which move to rehearse", why, strings.Join(candidates, ", "))
}

func describePolicy(p fleet.Policy) string {
	s := fmt.Sprintf("canary %d, parallel %d, maxUnavailable %s, soak %s, budget %d",
		p.CanaryNodes, p.ParallelNodes, p.MaxUnavailable, shortDuration(p.Soak), p.FailureBudget)
	for _, w := range p.Windows {
		days := make([]string, 0, len(w.Days))
		for _, d := range w.Days {
			days = append(days, d.String()[:3])
		}
		s += fmt.Sprintf(", window %s %s-%s %s", strings.Join(days, ","), w.Start, w.End, w.TimeZone)
	}
	if len(p.Freezes) > 0 {
		s += fmt.Sprintf(", %d freeze(s)", len(p.Freezes))
	}
	return s
}

func printRehearsal(out io.Writer, r rehearsal) {
	rep := r.Report
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	when := func(t time.Time) string { return t.UTC().Format("Mon 2006-01-02 15:04 MST") }
	fmt.Fprintf(tw, "cluster\t%s: %d nodes, driver %s → %s\n", r.Cluster, rep.Nodes, r.Previous, r.Target)
	fmt.Fprintf(tw, "rollout\t%s, as render writes it\n", r.Rollout)
	fmt.Fprintf(tw, "policy\t%s\n", r.Policy)
	fmt.Fprintf(tw, "outcome\t%s: %s\n", rep.Outcome, rep.Reason)
	fmt.Fprintf(tw, "makespan\t%s (%s → %s)\n", shortDuration(time.Duration(rep.Makespan)), when(rep.Start), when(rep.End))
	fmt.Fprintf(tw, "lower bound\t%s, efficiency %.0f%% (no windows, no waiting, every slot busy)\n", shortDuration(time.Duration(rep.LowerBound)), 100*rep.Efficiency)
	fmt.Fprintf(tw, "nodes\t%d done, %d rolled back, %d quarantined, %d untouched\n", rep.Done, rep.RolledBack, rep.Quarantined, rep.Untouched)
	held := "held"
	if !rep.BudgetHeld {
		held = "EXHAUSTED: the rollout stopped"
	}
	fmt.Fprintf(tw, "budget\t%d of %d failures: %s\n", rep.Failures, rep.Budget, held)
	var total time.Duration
	for _, h := range rep.Held {
		total += h.To.Sub(h.From)
	}
	switch len(rep.Held) {
	case 0:
		fmt.Fprintf(tw, "held\tnever\n")
	default:
		fmt.Fprintf(tw, "held\t%d times, %s in all\n", len(rep.Held), shortDuration(total))
	}
	// The first holds say most (the wait for the first window, approval);
	// a long rollout's weekly pattern needs no more lines.
	const shown = 6
	for i, h := range rep.Held {
		if i == shown {
			fmt.Fprintf(tw, "\t… and %d more\n", len(rep.Held)-shown)
			break
		}
		what := string(h.Phase)
		if h.Freeze != "" {
			what += " (" + h.Freeze + ")"
		}
		fmt.Fprintf(tw, "\t%s %s → %s (%s)\n", what, when(h.From), when(h.To), shortDuration(h.To.Sub(h.From)))
	}
	tw.Flush()
}

func writeSVG(path string, r rehearsal) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	title := fmt.Sprintf("%s: driver %s → %s, %s", r.Cluster, r.Previous, r.Target, r.Policy)
	open := sim.OpenIntervals(r.calendar, r.result.Start, r.result.End)
	if err := sim.WriteSVG(fh, title, r.result, open); err != nil {
		fh.Close()
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}

// shortDuration writes 2h30m rather than 2h30m0s, and 3d4h10m for long ones.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Minute)
	if d == 0 {
		return "0s"
	}
	days := ""
	if d >= 48*time.Hour {
		days = fmt.Sprintf("%dd", d/(24*time.Hour))
		d %= 24 * time.Hour
		if d == 0 {
			return days
		}
	}
	return days + hoursMinutes(d)
}

func hoursMinutes(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
