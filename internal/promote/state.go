package promote

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Step is one promotion command's change of [promotion], with its reason.
type Step struct {
	// Promotion is the new state.
	Promotion fleet.Promotion
	// Summary says what the step did, for the commit's subject.
	Summary string
	// Details are more lines for the commit's body. They say what the step
	// does, never what a check found: Apply adds the gate's outcome (passed,
	// or skipped and why) itself, so the message says only what happened.
	Details []string
	// Warnings are told to the person running the command and go into the
	// commit's body, e.g. that a start is a downgrade.
	Warnings []string
	// Removals are the operators the step takes off clusters that run them
	// now (see Removals); stepFleet fills them in from the edited fleet, so
	// every command that takes a step, or plans it, has them.
	Removals []Removal
	// Gate lists the clusters that must pass the gate first.
	Gate []string
	// GateRequired, when set, says why --skip-gate cannot stand in for the
	// gate: the step stops rendering a driver (its NVIDIADrivers, or the
	// DriverRollout that moves nodes off it), and only the gate can see that
	// no node still runs it.
	GateRequired string
	// Canary names the cluster whose DriverRollout must be seen waiting for
	// the approval of its canary node(s) before the step is taken: approving
	// a canary that has not soaked yet would wave it through unseen.
	Canary string
}

// Waiting is something the rollout waits for.
type Waiting struct {
	// Approval is the exact name `gpufleet approve` takes; empty when the
	// wait is not for an approval.
	Approval string
	// Cluster is set for the approval of a cluster's canary node(s): it
	// waits only once that cluster's DriverRollout says so (see Step.Canary).
	Cluster string
	// What says what waits, for people.
	What string
}

func clone(p fleet.Promotion) fleet.Promotion {
	out := p
	out.Approved = slices.Clone(p.Approved)
	if p.Rollout != nil {
		r := *p.Rollout
		out.Rollout = &r
	}
	return out
}

// active reports whether a rollout is under way (not aborted).
func active(p fleet.Promotion) bool { return p.Rollout != nil && !p.Rollout.Aborted }

// aborted reports whether an abort is in force: from `gpufleet abort` until
// the gate has seen every cluster the rollout reached back on the stable
// release. While it is, the aborted DriverRollout and both drivers'
// NVIDIADrivers stay rendered there, and nothing new may start.
func aborted(p fleet.Promotion) bool { return p.Rollout != nil && p.Rollout.Aborted }

// entryStage is the stage a release enters wave w at: its canary cluster
// alone when the wave has one ("receives the release first").
func entryStage(w *fleet.Wave) string {
	if w.Canary != "" {
		return fleet.StageCanary
	}
	return fleet.StageAll
}

// WaveApproval is the name that lets release r enter wave w (when it
// requires approval) or go past its canary cluster (when it pauses after
// it). Taking either step uses the approval up, so each of the two is
// given on its own, when it waits.
func WaveApproval(r string, w *fleet.Wave) string { return fleet.WaveApproval(r, w.Name) }

// ClusterApproval is the name that approves cluster c's in-cluster canary
// node for release r (the DriverRollout's spec.approval).
func ClusterApproval(r, c string) string { return fleet.ClusterApproval(r, c) }

// without returns list less name.
func without(list []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(a string) bool { return a == name })
}

// withoutRelease drops every approval of release r.
func withoutRelease(list []string, r string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(a string) bool { return strings.HasPrefix(a, r+"/") })
}

// Start begins rolling release out at the first wave.
func Start(f *fleet.Fleet, release string) (Step, error) {
	p := f.Promotion
	rel, ok := f.Releases[release]
	switch {
	case !ok:
		return Step{}, fmt.Errorf("unknown release %q (releases: %s)", release, strings.Join(f.ReleaseNames(), ", "))
	case aborted(p):
		return Step{}, fmt.Errorf("the abort of %s is in force until every cluster it reached (%s) is back on %s: `gpufleet promote` ends it once the gate sees them back", p.Rollout.Release, strings.Join(touchedClusters(f, p), ", "), p.Stable)
	case active(p):
		return Step{}, fmt.Errorf("release %s is being rolled out (at wave %s): finish it, or `gpufleet abort` it, first", p.Rollout.Release, p.Rollout.Wave)
	case release == p.Stable:
		return Step{}, fmt.Errorf("release %s is already the stable release", release)
	case len(f.Waves) == 0:
		return Step{}, errors.New("the fleet has no waves")
	}
	if err := controllerAlone(f, rel); err != nil {
		return Step{}, err
	}
	if why := f.NetworkOperatorLeftOut(rel); why != "" {
		return Step{}, errors.New(why)
	}
	first := f.Waves[0]
	next := clone(p)
	next.Rollout = &fleet.Rollout{Release: release, Wave: first.Name, Stage: entryStage(first)}
	next.Paused = false
	// Approvals of an earlier attempt at this release are stale.
	next.Approved = withoutRelease(next.Approved, release)
	step := Step{Promotion: next, Summary: fmt.Sprintf("start %s at wave %s", release, first.Name)}
	netop := fleet.NoNetworkOperator
	if rel.RunsNetworkOperator() {
		netop = rel.NetworkOperator
	}
	step.Details = append(step.Details, fmt.Sprintf("Release %s: gpu-operator %s, network-operator %s, driver %s.", release, rel.GPUOperator, netop, rel.Driver))
	if stable := f.Releases[p.Stable]; stable != nil && rel.Controller != stable.Controller {
		step.Details = append(step.Details, fmt.Sprintf("gpufleet-controller %s → %s, wave by wave with the release (the driver stays %s).", stable.Controller, rel.Controller, rel.Driver))
	}
	if why := f.Downgrade(release); len(why) > 0 {
		w := fmt.Sprintf("%s is older than the stable release %s (%s): this start is a downgrade", release, p.Stable, strings.Join(why, ", "))
		step.Warnings = append(step.Warnings, w)
	}
	if rel.ExpectFailure {
		step.Details = append(step.Details, "This release is a drill: it is expected to fail and roll back.")
	}
	if first.RequireApproval {
		step.Details = append(step.Details, fmt.Sprintf("Wave %s requires approval to be entered: this start, by its author, is that approval.", first.Name))
	}
	step.Details = append(step.Details, "Now on "+release+": "+strings.Join(reachedClusters(f, next), ", ")+".")
	return step, nil
}

// controllerAlone refuses a release that changes gpufleet-controller's
// version and the driver in one go. The controller is the program that
// drains every GPU node: a new version must first be seen running, taking
// over its rollouts, on the canary cluster and through the waves while no
// node moves, so that a defect in it costs a wave's gate and not a wave of
// drained nodes. With both in one release, the first thing a new
// controller would do is move every node it has, and an abort would roll
// the driver back under a controller that is itself being rolled out.
// Two releases do it: the new controller with the stable release's driver,
// then the new driver.
func controllerAlone(f *fleet.Fleet, rel *fleet.Release) error {
	stable := f.Releases[f.Promotion.Stable]
	if stable == nil || rel.Controller == stable.Controller {
		return nil
	}
	if rel.Driver == stable.Driver && rel.Precompiled == stable.Precompiled {
		return nil
	}
	return fmt.Errorf("release %s changes gpufleet-controller (%s → %s) and the driver (%s → %s) in one go: "+
		"the controller that moves every GPU node would start moving them the moment it arrives, untried; "+
		"roll out the new controller first in a release with the stable driver %s, then the driver",
		rel.Name, stable.Controller, rel.Controller, stable.Driver, rel.Driver, stable.Driver)
}

// Promote moves the rollout one step: from a wave's canary cluster to the
// whole wave (once approved, when the wave pauses after its canary), to the
// next wave (once approved, when it requires approval), or, after the last
// wave, makes the release stable. The clusters the rollout has reached in
// its current wave must pass the gate first (Step.Gate); making the release
// stable gates every cluster, since it stops rendering the old driver
// everywhere. With an abort in force, Promote ends it (see endAbort).
func Promote(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	if aborted(p) {
		return endAbort(f)
	}
	if !active(p) {
		return Step{}, errors.New("no rollout is under way: `gpufleet start RELEASE` first")
	}
	if p.Paused {
		return Step{}, fmt.Errorf("the rollout of %s is paused: `gpufleet resume` first", p.Rollout.Release)
	}
	r := p.Rollout
	wi := f.WaveIndex(r.Wave)
	w := f.Waves[wi]
	next := clone(p)
	step := Step{Gate: reachedIn(f, p, w)}
	switch {
	case r.Stage == fleet.StageCanary:
		if w.PauseAfterCanary {
			name := WaveApproval(r.Release, w)
			if !f.Approved(name) {
				return Step{}, fmt.Errorf("wave %s waits for approval after its canary cluster %s: `gpufleet approve %s`", w.Name, w.Canary, name)
			}
			next.Approved = without(next.Approved, name)
			step.Details = append(step.Details, fmt.Sprintf("The rest of wave %s was approved as %s.", w.Name, name))
		}
		next.Rollout.Stage = fleet.StageAll
		step.Summary = fmt.Sprintf("promote %s to all of wave %s", r.Release, w.Name)
		step.Details = append(step.Details, fmt.Sprintf("After its canary cluster %s, all of wave %s gets %s.", w.Canary, w.Name, r.Release))
	case wi == len(f.Waves)-1:
		next.Stable = r.Release
		next.Rollout = nil
		next.Approved = withoutRelease(next.Approved, r.Release)
		step.Gate = reachedClusters(f, p)
		old, now := f.Releases[p.Stable], f.Releases[r.Release]
		step.GateRequired = fmt.Sprintf("making %s stable stops rendering %s (driver %s) on every cluster; only the gate can see that no node still runs it", r.Release, p.Stable, old.Driver)
		step.Summary = fmt.Sprintf("%s is stable: every wave passed", r.Release)
		step.Details = append(step.Details, fmt.Sprintf("%s replaces %s as the stable release after the last wave, %s.", r.Release, p.Stable, w.Name))
		if old.Driver != now.Driver {
			step.Details = append(step.Details, fmt.Sprintf("The NVIDIADrivers of driver %s are removed from every cluster.", old.Driver))
		}
	default:
		nw := f.Waves[wi+1]
		if nw.RequireApproval {
			name := WaveApproval(r.Release, nw)
			if !f.Approved(name) {
				return Step{}, fmt.Errorf("wave %s requires approval before %s enters it: `gpufleet approve %s`", nw.Name, r.Release, name)
			}
			next.Approved = without(next.Approved, name)
			step.Details = append(step.Details, fmt.Sprintf("Entering wave %s was approved as %s.", nw.Name, name))
		}
		next.Rollout.Wave, next.Rollout.Stage = nw.Name, entryStage(nw)
		step.Summary = fmt.Sprintf("promote %s to wave %s", r.Release, nw.Name)
		if next.Rollout.Stage == fleet.StageCanary {
			step.Summary = fmt.Sprintf("promote %s to wave %s, canary cluster %s", r.Release, nw.Name, nw.Canary)
		}
		step.Details = append(step.Details, fmt.Sprintf("After wave %s, %s gets %s.", w.Name, strings.Join(reachedIn(f, next, nw), ", "), r.Release))
	}
	step.Promotion = next
	return step, nil
}

// endAbort ends an abort once the gate has seen every cluster the aborted
// rollout reached back on the stable release: only then may the aborted
// DriverRollout, and the NVIDIADrivers of the driver it rolled out, go.
func endAbort(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	r := p.Rollout
	touched := touchedClusters(f, p)
	next := clone(p)
	next.Rollout = nil
	next.Paused = false
	next.Approved = withoutRelease(next.Approved, r.Release)
	rel := f.Releases[r.Release]
	return Step{
		Promotion:    next,
		Summary:      fmt.Sprintf("end the abort of %s: every cluster is back on %s", r.Release, p.Stable),
		Details:      []string{fmt.Sprintf("%s's DriverRollout and the NVIDIADrivers of driver %s are removed from %s.", r.Release, rel.Driver, strings.Join(touched, ", "))},
		Gate:         touched,
		GateRequired: fmt.Sprintf("ending the abort of %s stops rendering driver %s on %s; only the gate can see that no node still runs it", r.Release, rel.Driver, strings.Join(touched, ", ")),
	}, nil
}

// Waits lists what the rollout waits for now: approvals by their exact
// names, and a pause.
func Waits(f *fleet.Fleet) []Waiting {
	p := f.Promotion
	if !active(p) {
		return nil
	}
	var out []Waiting
	if p.Paused {
		out = append(out, Waiting{What: "the rollout is paused: `gpufleet resume`"})
	}
	r := p.Rollout
	wi := f.WaveIndex(r.Wave)
	w := f.Waves[wi]
	if r.Stage == fleet.StageCanary && w.PauseAfterCanary && !f.Approved(WaveApproval(r.Release, w)) {
		out = append(out, Waiting{Approval: WaveApproval(r.Release, w), What: fmt.Sprintf("the rest of wave %s, after its canary cluster %s", w.Name, w.Canary)})
	}
	if r.Stage == fleet.StageAll && wi+1 < len(f.Waves) {
		if nw := f.Waves[wi+1]; nw.RequireApproval && !f.Approved(WaveApproval(r.Release, nw)) {
			what := "entering wave " + nw.Name
			if nw.Canary != "" {
				what += fmt.Sprintf(" (its canary cluster %s first)", nw.Canary)
			}
			out = append(out, Waiting{Approval: WaveApproval(r.Release, nw), What: what})
		}
	}
	for _, c := range reachedClusters(f, p) {
		if !f.PolicyFor(c).AutoApproveCanary && !f.CanaryApproved(c) {
			out = append(out, Waiting{Approval: ClusterApproval(r.Release, c), Cluster: c, What: fmt.Sprintf("the canary node(s) of cluster %s, once they have soaked (its DriverRollout waits for approval)", c)})
		}
	}
	return out
}

// Approve records the approval name, which must be exactly one of the
// names the rollout waits for. A cluster's canary approval also needs its
// DriverRollout to be seen waiting (Step.Canary), which Apply checks.
func Approve(f *fleet.Fleet, name string) (Step, error) {
	p := f.Promotion
	switch {
	case aborted(p):
		return Step{}, fmt.Errorf("nothing waits for approval: the rollout of %s is aborted", p.Rollout.Release)
	case !active(p):
		return Step{}, errors.New("nothing waits for approval: no rollout is under way")
	case p.Paused:
		return Step{}, fmt.Errorf("the rollout of %s is paused: `gpufleet resume` before approving", p.Rollout.Release)
	}
	var names []string
	for _, w := range Waits(f) {
		if w.Approval == "" {
			continue
		}
		if w.Approval == name {
			next := clone(p)
			next.Approved = append(next.Approved, name)
			return Step{Promotion: next, Summary: "approve " + name, Details: []string{"Approved: " + w.What + "."}, Canary: w.Cluster}, nil
		}
		names = append(names, w.Approval)
	}
	already := ""
	if f.Approved(name) {
		already = " (it is approved already)"
	}
	if len(names) == 0 {
		return Step{}, fmt.Errorf("%q is not waiting for approval%s: nothing is", name, already)
	}
	return Step{}, fmt.Errorf("%q is not waiting for approval%s; waiting: %s", name, already, strings.Join(names, ", "))
}

// Pause stops promotion and approvals, and pauses the in-cluster rollouts.
func Pause(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	switch {
	case !active(p):
		return Step{}, errors.New("no rollout is under way to pause")
	case p.Paused:
		return Step{}, fmt.Errorf("the rollout of %s is already paused", p.Rollout.Release)
	}
	next := clone(p)
	next.Paused = true
	return Step{Promotion: next, Summary: "pause the rollout of " + p.Rollout.Release, Details: []string{"Promotion and approvals stop; the DriverRollouts of " + strings.Join(reachedClusters(f, p), ", ") + " are paused."}}, nil
}

// Resume undoes Pause.
func Resume(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	if !active(p) || !p.Paused {
		return Step{}, errors.New("no paused rollout to resume")
	}
	next := clone(p)
	next.Paused = false
	return Step{Promotion: next, Summary: "resume the rollout of " + p.Rollout.Release}, nil
}

// Abort returns every cluster to the stable release. The clusters the
// rollout reached keep its DriverRollout with abort set, and both drivers'
// NVIDIADrivers, so their upgraded nodes roll back; the abort stays in force
// (and `start` is refused) until the gate has seen them all back, when
// Promote ends it.
func Abort(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	if aborted(p) {
		return Step{}, fmt.Errorf("the rollout of %s is aborted already: `gpufleet promote` ends the abort once the gate sees %s back on %s", p.Rollout.Release, strings.Join(touchedClusters(f, p), ", "), p.Stable)
	}
	if !active(p) {
		return Step{}, errors.New("no rollout is under way to abort")
	}
	next := clone(p)
	next.Rollout.Aborted = true
	next.Paused = false
	reached := strings.Join(reachedClusters(f, p), ", ")
	return Step{Promotion: next, Summary: fmt.Sprintf("abort %s: every cluster returns to %s", p.Rollout.Release, p.Stable), Details: []string{
		"Clusters rolling back: " + reached + ".",
		fmt.Sprintf("The abort stays in force, and no release can start, until the gate sees %s back on %s: then `gpufleet promote` ends it.", reached, p.Stable),
	}}, nil
}

// reachedClusters lists the clusters promotion state p has given the new release.
func reachedClusters(f *fleet.Fleet, p fleet.Promotion) []string {
	g := f.WithPromotion(p)
	var out []string
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			if g.Reached(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// touchedClusters lists the clusters the rollout of p had reached, aborted
// or not: where its driver may still run.
func touchedClusters(f *fleet.Fleet, p fleet.Promotion) []string {
	g := f.WithPromotion(p)
	var out []string
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			if g.Touched(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// reachedIn lists the clusters of wave w that p has reached.
func reachedIn(f *fleet.Fleet, p fleet.Promotion, w *fleet.Wave) []string {
	var out []string
	for _, c := range reachedClusters(f, p) {
		if slices.Contains(w.Clusters, c) {
			out = append(out, c)
		}
	}
	return out
}
