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
	// Details are more lines for the commit's body.
	Details []string
	// Gate lists the clusters that must pass the gate first (promote only).
	Gate []string
}

// Waiting is something the rollout waits for.
type Waiting struct {
	// Approval is the exact name `gpufleet approve` takes; empty when the
	// wait is not for an approval.
	Approval string
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

// entryStage is the stage a release enters wave w at: its canary cluster
// alone when the wave pauses after its canary.
func entryStage(w *fleet.Wave) string {
	if w.Canary != "" && (w.PauseAfterCanary || w.RequireApproval) {
		return fleet.StageCanary
	}
	return fleet.StageAll
}

// WaveApproval is the name that lets release r run on the whole of wave w.
func WaveApproval(r string, w *fleet.Wave) string { return fleet.WaveApproval(r, w.Name) }

// ClusterApproval is the name that approves cluster c's in-cluster canary
// node for release r (the DriverRollout's spec.approval).
func ClusterApproval(r, c string) string { return fleet.ClusterApproval(r, c) }

// Start begins rolling release out at the first wave.
func Start(f *fleet.Fleet, release string) (Step, error) {
	p := f.Promotion
	rel, ok := f.Releases[release]
	switch {
	case !ok:
		return Step{}, fmt.Errorf("unknown release %q (releases: %s)", release, strings.Join(f.ReleaseNames(), ", "))
	case active(p):
		return Step{}, fmt.Errorf("release %s is being rolled out (at wave %s): finish it, or `gpufleet abort` it, first", p.Rollout.Release, p.Rollout.Wave)
	case release == p.Stable:
		return Step{}, fmt.Errorf("release %s is already the stable release", release)
	case len(f.Waves) == 0:
		return Step{}, errors.New("the fleet has no waves")
	}
	first := f.Waves[0]
	if first.RequireApproval && first.Canary == "" && !f.Approved(WaveApproval(release, first)) {
		return Step{}, fmt.Errorf("wave %s requires approval before release %s enters it: `gpufleet approve %s`", first.Name, release, WaveApproval(release, first))
	}
	next := clone(p)
	next.Rollout = &fleet.Rollout{Release: release, Wave: first.Name, Stage: entryStage(first)}
	next.Paused = false
	// Approvals of an earlier attempt at this release are stale.
	next.Approved = slices.DeleteFunc(next.Approved, func(a string) bool { return strings.HasPrefix(a, release+"/") })
	step := Step{Promotion: next, Summary: fmt.Sprintf("start %s at wave %s", release, first.Name)}
	step.Details = append(step.Details, fmt.Sprintf("Release %s: gpu-operator %s, network-operator %s, driver %s.", release, rel.GPUOperator, rel.NetworkOperator, rel.Driver))
	if rel.ExpectFailure {
		step.Details = append(step.Details, "This release is a drill: it is expected to fail and roll back.")
	}
	step.Details = append(step.Details, "Now on "+release+": "+strings.Join(reachedClusters(f, next), ", ")+".")
	return step, nil
}

// Promote moves the rollout one step: from a wave's canary cluster to the
// whole wave (once approved), to the next wave, or, after the last wave,
// makes the release stable. The clusters the rollout has reached in its
// current wave must pass the gate first (Step.Gate).
func Promote(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
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
		name := WaveApproval(r.Release, w)
		if !f.Approved(name) {
			return Step{}, fmt.Errorf("wave %s waits for approval after its canary cluster %s: `gpufleet approve %s`", w.Name, w.Canary, name)
		}
		next.Rollout.Stage = fleet.StageAll
		step.Summary = fmt.Sprintf("promote %s to all of wave %s", r.Release, w.Name)
		step.Details = append(step.Details, fmt.Sprintf("Canary cluster %s passed the gate; approved as %s.", w.Canary, name))
	case wi == len(f.Waves)-1:
		next.Stable = r.Release
		next.Rollout = nil
		next.Approved = slices.DeleteFunc(next.Approved, func(a string) bool { return strings.HasPrefix(a, r.Release+"/") })
		step.Summary = fmt.Sprintf("%s is stable: every wave passed", r.Release)
		step.Details = append(step.Details, fmt.Sprintf("The last wave, %s, passed the gate; %s replaces %s as the stable release.", w.Name, r.Release, p.Stable))
	default:
		nw := f.Waves[wi+1]
		if nw.RequireApproval && nw.Canary == "" && !f.Approved(WaveApproval(r.Release, nw)) {
			return Step{}, fmt.Errorf("wave %s requires approval before %s enters it: `gpufleet approve %s`", nw.Name, r.Release, WaveApproval(r.Release, nw))
		}
		next.Rollout.Wave, next.Rollout.Stage = nw.Name, entryStage(nw)
		step.Summary = fmt.Sprintf("promote %s to wave %s", r.Release, nw.Name)
		if next.Rollout.Stage == fleet.StageCanary {
			step.Summary = fmt.Sprintf("promote %s to wave %s, canary cluster %s", r.Release, nw.Name, nw.Canary)
		}
		step.Details = append(step.Details, fmt.Sprintf("Wave %s passed the gate.", w.Name))
	}
	step.Promotion = next
	return step, nil
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
	if r.Stage == fleet.StageCanary && !f.Approved(WaveApproval(r.Release, w)) {
		out = append(out, Waiting{Approval: WaveApproval(r.Release, w), What: fmt.Sprintf("the rest of wave %s, after its canary cluster %s", w.Name, w.Canary)})
	}
	if r.Stage == fleet.StageAll && wi+1 < len(f.Waves) {
		if nw := f.Waves[wi+1]; nw.RequireApproval && nw.Canary == "" && !f.Approved(WaveApproval(r.Release, nw)) {
			out = append(out, Waiting{Approval: WaveApproval(r.Release, nw), What: fmt.Sprintf("entering wave %s", nw.Name)})
		}
	}
	for _, c := range reachedClusters(f, p) {
		if !f.PolicyFor(c).AutoApproveCanary && !f.CanaryApproved(c) {
			out = append(out, Waiting{Approval: ClusterApproval(r.Release, c), What: fmt.Sprintf("the canary node(s) of cluster %s (its DriverRollout)", c)})
		}
	}
	return out
}

// Approve records the approval name, which must be exactly one of the
// names the rollout waits for.
func Approve(f *fleet.Fleet, name string) (Step, error) {
	p := f.Promotion
	if !active(p) {
		return Step{}, errors.New("nothing waits for approval: no rollout is under way")
	}
	if p.Paused {
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
			return Step{Promotion: next, Summary: "approve " + name, Details: []string{"Approved: " + w.What + "."}}, nil
		}
		names = append(names, w.Approval)
	}
	if len(names) == 0 {
		return Step{}, fmt.Errorf("%q is not waiting for approval: nothing is", name)
	}
	return Step{}, fmt.Errorf("%q is not waiting for approval; waiting: %s", name, strings.Join(names, ", "))
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
// rollout reached keep its DriverRollout with abort set, so their upgraded
// nodes roll back.
func Abort(f *fleet.Fleet) (Step, error) {
	p := f.Promotion
	if !active(p) {
		return Step{}, errors.New("no rollout is under way to abort")
	}
	next := clone(p)
	next.Rollout.Aborted = true
	next.Paused = false
	return Step{Promotion: next, Summary: fmt.Sprintf("abort %s: every cluster returns to %s", p.Rollout.Release, p.Stable), Details: []string{"Clusters rolling back: " + strings.Join(reachedClusters(f, p), ", ") + "."}}, nil
}

// reachedClusters lists the clusters promotion state p has given the new release.
func reachedClusters(f *fleet.Fleet, p fleet.Promotion) []string {
	saved := f.Promotion
	f.Promotion = p
	defer func() { f.Promotion = saved }()
	var out []string
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			if f.Reached(c) {
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
