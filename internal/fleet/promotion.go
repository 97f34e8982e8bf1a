package fleet

import (
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/internal/versions"
)

// WaveIndex returns the index of the wave named name, or -1.
func (f *Fleet) WaveIndex(name string) int {
	for i, w := range f.Waves {
		if w.Name == name {
			return i
		}
	}
	return -1
}

// WaveOf returns the index of the wave that holds cluster, or -1.
func (f *Fleet) WaveOf(cluster string) int {
	for i, w := range f.Waves {
		if contains(w.Clusters, cluster) {
			return i
		}
	}
	return -1
}

// ReleaseFor returns the release cluster should run according to
// [promotion]: the rollout's release in every wave it has reached (only the
// canary cluster of a wave at its canary stage), the stable release elsewhere.
func (f *Fleet) ReleaseFor(cluster string) *Release {
	if f.Reached(cluster) {
		return f.Releases[f.Promotion.Rollout.Release]
	}
	return f.Releases[f.Promotion.Stable]
}

// Reached reports whether the rollout under way has reached cluster (an
// aborted rollout has reached none: they all run the stable release).
func (f *Fleet) Reached(cluster string) bool {
	r := f.Promotion.Rollout
	return r != nil && !r.Aborted && f.Touched(cluster)
}

// Touched reports whether the rollout, aborted or not, had reached cluster:
// an aborted rollout still has nodes to roll back there.
func (f *Fleet) Touched(cluster string) bool {
	r := f.Promotion.Rollout
	if r == nil || r.Release == "" {
		return false
	}
	at, wi := f.WaveIndex(r.Wave), f.WaveOf(cluster)
	switch {
	case at < 0 || wi < 0 || wi > at:
		return false
	case wi < at:
		return true
	case r.Stage == StageCanary:
		return f.Waves[wi].Canary == cluster
	default:
		return true
	}
}

// WaveApproval is the approval that lets release run on the whole of wave
// (entering it, or going past its canary cluster).
func WaveApproval(release, wave string) string { return release + "/" + wave }

// ClusterApproval is the approval of cluster's in-cluster canary node(s)
// for release: the DriverRollout's spec.approval.
func ClusterApproval(release, cluster string) string { return release + "/" + cluster }

// CanaryApproved reports whether cluster's in-cluster canary is approved
// for the rollout's release. Only its own name approves it: a wave's
// approval judges the wave's canary cluster and lets the release go on, it
// never approves the canary node(s) inside the wave's clusters, each of which
// a person approves by name once they have soaked.
func (f *Fleet) CanaryApproved(cluster string) bool {
	r := f.Promotion.Rollout
	return r != nil && f.Approved(ClusterApproval(r.Release, cluster))
}

// Approved reports whether name (e.g. "r2026-08/prod-h100") is approved.
func (f *Fleet) Approved(name string) bool { return contains(f.Promotion.Approved, name) }

func (f *Fleet) validatePromotion(probs *problemList) {
	p := &f.Promotion
	if p.Stable == "" {
		probs.add("promotion", "stable is required: the release every cluster runs when no rollout has reached it")
	} else if _, ok := f.Releases[p.Stable]; !ok {
		probs.add("promotion.stable", "unknown release %q%s", p.Stable, suggest(p.Stable, f.ReleaseNames()))
	}
	if r := p.Rollout; r != nil {
		switch _, ok := f.Releases[r.Release]; {
		case r.Release == "":
			probs.add("promotion.rollout", "rollout needs a release")
		case !ok:
			probs.add("promotion.rollout.release", "unknown release %q%s", r.Release, suggest(r.Release, f.ReleaseNames()))
		case r.Release == p.Stable:
			probs.add("promotion.rollout.release", "release %q is already the stable release", r.Release)
		}
		wi := f.WaveIndex(r.Wave)
		if wi < 0 {
			probs.add("promotion.rollout.wave", "unknown wave %q%s", r.Wave, suggest(r.Wave, f.waveNames()))
		}
		switch r.Stage {
		case "":
			r.Stage = StageAll
		case StageAll:
		case StageCanary:
			if wi >= 0 && f.Waves[wi].Canary == "" {
				probs.add("promotion.rollout.stage", "wave %q has no canary cluster, so it has no canary stage", r.Wave)
			}
		default:
			probs.add("promotion.rollout.stage", "%q is not a stage: use %q or %q", r.Stage, StageCanary, StageAll)
		}
	}
	f.validateApprovalNames(probs)
	for i, a := range p.Approved {
		key := fmt.Sprintf("promotion.approved[%d]", i)
		rel, target, ok := strings.Cut(a, "/")
		if !ok {
			probs.add(key, "%q is not an approval: use RELEASE/WAVE or RELEASE/CLUSTER, e.g. r2026-08/prod-h100", a)
			continue
		}
		if _, ok := f.Releases[rel]; !ok {
			probs.add(key, "approval %q names unknown release %q", a, rel)
		}
		if _, ok := f.Clusters[target]; !ok && f.WaveIndex(target) < 0 {
			probs.add(key, "approval %q names neither a wave nor a cluster: %q", a, target)
		}
	}
}

// validateApprovalNames refuses a wave named like a cluster: approvals are
// RELEASE/WAVE and RELEASE/CLUSTER, so one `gpufleet approve R/NAME` would
// name both and approve two different things.
func (f *Fleet) validateApprovalNames(probs *problemList) {
	for i, w := range f.Waves {
		if _, ok := f.Clusters[w.Name]; !ok || w.Name == "" {
			continue
		}
		at := probs.file
		if line, col := probs.pos.lookup(joinKey("clusters", w.Name)); line > 0 {
			at = fmt.Sprintf("%s:%d:%d", probs.file, line, col)
		}
		probs.add(fmt.Sprintf("waves[%d].name", i), "wave %q has the name of cluster %q (%s): an approval RELEASE/%s would name both; rename the wave or the cluster", w.Name, w.Name, at, w.Name)
	}
}

// Downgrade says how release is older than the stable release, one reason
// per component (GPU Operator, Network Operator, driver); nil when it is not
// older in any of them. Starting such a release takes nodes back to an older
// driver or operator, which a person should mean to do.
func (f *Fleet) Downgrade(release string) []string {
	r, s := f.Releases[release], f.Releases[f.Promotion.Stable]
	if r == nil || s == nil || r == s {
		return nil
	}
	var why []string
	for _, c := range []struct{ what, old, new string }{
		{"gpu-operator", s.GPUOperator, r.GPUOperator},
		{"network-operator", s.NetworkOperator, r.NetworkOperator},
		{"driver", s.Driver, r.Driver},
	} {
		// A release without a Network Operator removes it rather than
		// going back to an older one (see the promotion's removals).
		if c.what == "network-operator" && !(s.RunsNetworkOperator() && r.RunsNetworkOperator()) {
			continue
		}
		if order, ok := versions.Compare(c.new, c.old); ok && order < 0 {
			why = append(why, fmt.Sprintf("%s %s < %s", c.what, c.new, c.old))
		}
	}
	return why
}

// WithPromotion is a copy of f in another promotion state, sharing the rest:
// what render would write, or the gate would expect, if [promotion] said p.
func (f *Fleet) WithPromotion(p Promotion) *Fleet {
	g := *f
	g.Promotion = p
	return &g
}

func (f *Fleet) waveNames() []string {
	names := make([]string, len(f.Waves))
	for i, w := range f.Waves {
		names[i] = w.Name
	}
	return names
}
