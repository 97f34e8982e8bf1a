package rehearse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// InputError is an error in what the caller asked for (an unknown cluster
// or release, no release to rehearse, a timeline of several clusters): the
// request is wrong, not the rollout. Find it with errors.As.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error itself.
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// Options say what to rehearse and how.
type Options struct {
	Fleet *fleet.Fleet
	// FleetFile names the fleet file in messages.
	FleetFile string
	// Cluster is the one cluster to rehearse; empty: every cluster.
	Cluster string
	// Release is the release to rehearse moving to; empty: the one being
	// rolled out (with none, Run says what to pass).
	Release string
	// Nodes, when positive, simulates that many GPU nodes instead of the
	// cluster's pools.
	Nodes int
	// Seed seeds the random durations and failures.
	Seed uint64
	// FailRate and XIDRate are the chances of a failed install and of an
	// XID during the soak, per node.
	FailRate, XIDRate float64
	// FailRateSet says FailRate was given: otherwise a release marked
	// expect-failure (a drill) fails every install.
	FailRateSet bool
	// Start is when the rollout starts.
	Start time.Time
	// Record keeps every transition (for Transcript and Timeline).
	Record bool
	// Timeline asks for one cluster only: a timeline draws one.
	Timeline bool
	// Utilization is the share of the nodes' GPUs that simulated jobs
	// hold while the rollout goes over them (sim.DefaultWorkload), so
	// that the rehearsal measures the GPU work the rollout destroys; zero
	// runs no jobs: idle nodes.
	Utilization float64
	// DRA has the jobs hold their GPUs through ResourceClaims of NVIDIA's
	// DRA driver (v1alpha1.DRADriverGPU) instead of nvidia.com/gpu
	// requests, as on a cluster that allocates its GPUs with DRA. The jobs
	// are otherwise the same, so a rehearsal with and without it says
	// whether the controller sees, drains and costs them alike.
	DRA bool
}

// Rehearsal is one cluster's simulated rollout. Its exported fields are
// what `gpufleet simulate -o json` writes.
type Rehearsal struct {
	Cluster string `json:"cluster"`
	// Rollout is the name of the DriverRollout rehearsed, as render writes it.
	Rollout  string `json:"rollout"`
	Previous string `json:"previousDriver"`
	Target   string `json:"targetDriver"`
	Policy   string `json:"policy"`
	// Workload says the jobs the nodes ran (sim.Workload.Describe); empty
	// when they ran none. Report.Workload is what the rollout destroyed
	// of them.
	Workload string     `json:"workload,omitempty"`
	Report   sim.Report `json:"report"`

	result   *sim.Result
	rollout  *v1alpha1.DriverRollout
	calendar planner.Calendar
}

// DriverRollout is the DriverRollout rehearsed, as render writes it.
func (r *Rehearsal) DriverRollout() *v1alpha1.DriverRollout { return r.rollout }

// Result is the simulation's full result.
func (r *Rehearsal) Result() *sim.Result { return r.result }

// Transcript is every transition with its reason (Options.Record).
func (r *Rehearsal) Transcript() string { return r.result.TranscriptText() }

// Timeline writes the rollout's timeline picture (SVG) to w: one row per
// node, coloured by phase, with the times nodes may start shaded.
func (r *Rehearsal) Timeline(w io.Writer) error {
	title := fmt.Sprintf("%s: driver %s → %s, %s", r.Cluster, r.Previous, r.Target, r.Policy)
	open := sim.OpenIntervals(r.calendar, r.result.Start, r.result.End)
	return sim.WriteSVG(w, title, r.result, open)
}

// Run rehearses each cluster Options name, in the fleet file's order.
// An *InputError is the caller's; any other error, the rehearsal's.
func (o Options) Run(_ context.Context) ([]Rehearsal, error) {
	f := o.Fleet
	clusters := f.ClusterNames()
	if o.Cluster != "" {
		if _, ok := f.Clusters[o.Cluster]; !ok {
			return nil, inputErrorf("no cluster %q in %s (clusters: %s)", o.Cluster, o.FleetFile, strings.Join(clusters, ", "))
		}
		clusters = []string{o.Cluster}
	}
	if o.Release != "" && f.Releases[o.Release] == nil {
		return nil, inputErrorf("no release %q in %s (releases: %s)", o.Release, o.FleetFile, strings.Join(f.ReleaseNames(), ", "))
	}
	if o.Timeline && len(clusters) != 1 {
		return nil, inputErrorf("--svg draws one cluster: add --cluster (one of %s)", strings.Join(clusters, ", "))
	}
	release, err := Release(f, o.Release)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	var all []Rehearsal
	for _, c := range clusters {
		r, err := o.rehearse(c, release)
		if err != nil {
			return nil, fmt.Errorf("simulate %s: %w", c, err)
		}
		all = append(all, r)
	}
	return all, nil
}

// Unfinished fails a rehearsal that never got to its end: still waiting
// for a window or a freeze when the simulation stopped. Reporting it as a
// success would promise a rollout that the calendar does not allow.
func Unfinished(all []Rehearsal) error {
	var errs []error
	for _, r := range all {
		if r.result.HitHorizon || r.Report.Outcome == v1alpha1.PhaseOutsideWindow {
			errs = append(errs, fmt.Errorf("%s: the rollout did not finish: %s", r.Cluster, r.Report.Reason))
		}
	}
	return errors.Join(errs...)
}

// rehearse simulates cluster's rollout under its policy: the very
// DriverRollout render writes for the cluster once the release reaches it
// (render.DriverRollout), over nodes labelled as GPU Feature Discovery
// labels them, so that its node selector picks them as it would. The
// rollout keeps the actuator its policy names.
func (o Options) rehearse(cluster, release string) (Rehearsal, error) {
	return o.rehearseWith(cluster, release, way{})
}

// Release is the release to rehearse when none is given: the one being
// rolled out. With none, it refuses and says what to pass: rehearsing the
// stable release onto itself shows nothing.
func Release(f *fleet.Fleet, release string) (string, error) {
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

// DescribePolicy is the one line a rehearsal says its policy in.
func DescribePolicy(p fleet.Policy) string {
	var s strings.Builder
	fmt.Fprintf(&s, "canary %d, parallel %d, maxUnavailable %s, soak %s, budget %d",
		p.CanaryNodes, p.ParallelNodes, p.MaxUnavailable, ShortDuration(p.Soak), p.FailureBudget)
	for _, w := range p.Windows {
		days := make([]string, 0, len(w.Days))
		for _, d := range w.Days {
			days = append(days, d.String()[:3])
		}
		fmt.Fprintf(&s, ", window %s %s-%s %s", strings.Join(days, ","), w.Start, w.End, w.TimeZone)
	}
	if len(p.Freezes) > 0 {
		fmt.Fprintf(&s, ", %d freeze(s)", len(p.Freezes))
	}
	if label := domainLabel(p); label != "" {
		fmt.Fprintf(&s, ", maintenance domains by %s of at most %d nodes", label, p.DomainSize)
	}
	return s.String()
}

// ShortDuration writes 2h30m rather than 2h30m0s, and 3d4h10m for long ones.
func ShortDuration(d time.Duration) string {
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
