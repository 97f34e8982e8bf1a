package dashboard

import (
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// PromotionView is the page's head: where the promotion stands, in the
// words of `gpufleet status`.
type PromotionView struct {
	FleetFile string
	// FleetErr is why the fleet file could not be read again; the page
	// shows the last good one.
	FleetErr string
	Revision string
	Stable   string
	Rollout  string
	Notices  []string
	// Waiting are all of status's waits; Next its next command.
	Waiting []string
	Next    string
	Waves   []WaveView
}

// WaveView is one wave, in order.
type WaveView struct {
	Name            string
	Clusters        []string
	Canary          string
	PauseAfter      bool
	RequireApproval bool
	// Waiting are the waits whose approval names this wave.
	Waiting []string
}

// promotionView builds the head from the current fleet file; d.mu is held.
func (d *Dashboard) promotionView() PromotionView {
	st := d.status
	pv := PromotionView{FleetFile: d.o.FleetFile, FleetErr: d.fleetErr, Revision: d.revision,
		Stable: st.Stable, Rollout: st.Rollout, Notices: st.Notices, Waiting: st.Waiting, Next: st.Next}
	release := ""
	if r := d.fleet.Promotion.Rollout; r != nil {
		release = r.Release
	}
	for _, w := range d.fleet.Waves {
		wv := WaveView{Name: w.Name, Clusters: w.Clusters, Canary: w.Canary, PauseAfter: w.PauseAfterCanary, RequireApproval: w.RequireApproval}
		for _, wt := range d.waits {
			if wt.Approval != "" && release != "" && wt.Approval == fleet.WaveApproval(release, w.Name) {
				wv.Waiting = append(wv.Waiting, waitText(wt))
			}
		}
		pv.Waves = append(pv.Waves, wv)
	}
	return pv
}
