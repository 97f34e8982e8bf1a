package render

import (
	"fmt"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// DriverRollout returns the DriverRollout render writes for cluster once
// release reaches it (empty release: what render writes now). It is what
// `gpufleet simulate` rehearses, so the rehearsal runs the very object Flux
// applies: its name, node selector, policy, windows, freezes and approval.
//
// A release that has not reached the cluster yet is rendered as a rollout
// that has just arrived: rolling back to the stable release, neither
// approved nor aborted, paused only when the promotion is.
func DriverRollout(f *fleet.Fleet, cluster, release string) (*v1alpha1.DriverRollout, error) {
	c := f.Clusters[cluster]
	if c == nil {
		return nil, fmt.Errorf("no cluster %q", cluster)
	}
	p := planFor(f, c)
	if release != "" && release != p.rollout.Name {
		r := f.Releases[release]
		if r == nil {
			return nil, fmt.Errorf("no release %q", release)
		}
		p.rollout = r
		p.approved, p.abort = false, false
		p.paused = f.Promotion.Paused
	}
	return driverRolloutOf(p), nil
}
