package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// peerTimeline records, as the bench's node informer sees them, the
// changes that say where a rollout's time goes: the operator's upgrade
// state, gpufleet's skip label (a hold or a release) and rollout phase.
// It answers the question issue 31 asks of the gated
// path: which of its steps the operator alone does not take, and what
// each costs (breakdown).
type peerTimeline struct {
	mu    sync.Mutex
	marks []nodeMark
}

// nodeMark is one change of one node.
type nodeMark struct {
	at         time.Time
	node, what string
	value      string
}

// The marks' kinds.
const (
	markState = "state" // the operator's upgrade state
	markSkip  = "skip"  // gpufleet's hold: "true", or "" once released
	markPhase = "phase" // gpufleet's rollout phase
)

// observe records what changed from old to nd.
func (tl *peerTimeline) observe(old, nd *corev1.Node) {
	if old == nil || nd == nil {
		return
	}
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for what, key := range map[string]string{markState: v1alpha1.LabelOperatorUpgradeState, markSkip: v1alpha1.LabelOperatorUpgradeSkip, markPhase: v1alpha1.LabelPhase} {
		if a, b := old.Labels[key], nd.Labels[key]; a != b {
			tl.marks = append(tl.marks, nodeMark{at: now, node: nd.Name, what: what, value: b})
		}
	}
}

// busy reports whether a node in operator state s is in the operator's
// hands (cordon-required … uncordon-required, as the operator counts
// upgrades in progress, upgrade-failed aside).
func busy(s string) bool {
	return v1alpha1.OperatorUpgrading(s) && s != v1alpha1.OperatorStateFailed
}

// inMaintenance reports whether gpufleet's own actuator has a node in
// phase ph out of service for its upgrade (Soaking excluded, which the
// breakdown says apart).
func inMaintenance(ph string) bool {
	switch v1alpha1.NodePhase(ph) {
	case v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating, v1alpha1.NodeRollingBack:
		return true
	}
	return false
}

// breakdown says where the time of the rollout from t0 to end went on this
// way: how long before the first node moved, how many nodes were in
// maintenance (and soaking) on average, how long a node's maintenance
// took, and, on the gated way, how long the operator took to pick up a
// released node, gpufleet to see it upgraded, and a freed slot to be
// filled again.
func (tl *peerTimeline) breakdown(t0, end time.Time, way string) string {
	tl.mu.Lock()
	marks := slices.Clone(tl.marks)
	tl.mu.Unlock()
	var in []nodeMark
	for _, m := range marks {
		if !m.at.Before(t0) && !m.at.After(end) {
			in = append(in, m)
		}
	}
	// Every node's state as of t0, then each change in order.
	state := map[string]map[string]string{}
	for _, m := range marks {
		if m.at.Before(t0) {
			if state[m.node] == nil {
				state[m.node] = map[string]string{}
			}
			state[m.node][m.what] = m.value
		}
	}
	get := func(node, what string) string { return state[node][what] }
	set := func(m nodeMark) {
		if state[m.node] == nil {
			state[m.node] = map[string]string{}
		}
		state[m.node][m.what] = m.value
	}
	counting := func() (maint, soak int) {
		for _, s := range state {
			switch way {
			case "gpufleet":
				if inMaintenance(s[markPhase]) {
					maint++
				}
			default:
				if busy(s[markState]) {
					maint++
				}
			}
			if s[markPhase] == string(v1alpha1.NodeSoaking) {
				soak++
			}
		}
		return maint, soak
	}
	var (
		first                 time.Time
		maintArea, soakArea   float64
		last                  = t0
		released              = map[string]time.Time{}
		started, upgraded     = map[string]time.Time{}, map[string]time.Time{}
		pickups, durations    []time.Duration
		detections, refills   []time.Duration
		freed                 []time.Time
		maintNow, soakNow     = counting()
		peakMaint, peakSoak   = maintNow, soakNow
		releases, maintStarts int
	)
	for _, m := range in {
		maintArea += float64(maintNow) * m.at.Sub(last).Seconds()
		soakArea += float64(soakNow) * m.at.Sub(last).Seconds()
		last = m.at
		before := get(m.node, m.what)
		set(m)
		switch {
		case m.what == markSkip && before == "true" && m.value == "":
			released[m.node] = m.at
			releases++
			if len(freed) > 0 {
				refills = append(refills, m.at.Sub(freed[0]))
				freed = freed[1:]
			}
		case m.what == markState && busy(m.value) && !busy(before):
			started[m.node] = m.at
			maintStarts++
			if first.IsZero() {
				first = m.at
			}
			if r, ok := released[m.node]; ok {
				pickups = append(pickups, m.at.Sub(r))
				delete(released, m.node)
			}
			if way == "operator" && len(freed) > 0 {
				refills = append(refills, m.at.Sub(freed[0]))
				freed = freed[1:]
			}
		case m.what == markState && m.value == v1alpha1.OperatorStateDone && busy(before):
			upgraded[m.node] = m.at
			if s, ok := started[m.node]; ok {
				durations = append(durations, m.at.Sub(s))
			}
			if way == "operator" {
				freed = append(freed, m.at)
			}
		case m.what == markPhase && way == "gpufleet" && inMaintenance(m.value) && !inMaintenance(before) && before != string(v1alpha1.NodeSoaking):
			started[m.node] = m.at
			maintStarts++
			if first.IsZero() {
				first = m.at
			}
		case m.what == markPhase && m.value == string(v1alpha1.NodeSoaking):
			if u, ok := upgraded[m.node]; ok && way == "gated" {
				detections = append(detections, m.at.Sub(u))
			}
			if s, ok := started[m.node]; ok && way == "gpufleet" {
				durations = append(durations, m.at.Sub(s))
			}
		case m.what == markPhase && m.value == string(v1alpha1.NodeDone) && before == string(v1alpha1.NodeSoaking):
			if way == "gated" {
				freed = append(freed, m.at)
			}
		}
		maintNow, soakNow = counting()
		peakMaint, peakSoak = max(peakMaint, maintNow), max(peakSoak, soakNow)
	}
	maintArea += float64(maintNow) * end.Sub(last).Seconds()
	soakArea += float64(soakNow) * end.Sub(last).Seconds()
	span := end.Sub(t0).Seconds()
	var b strings.Builder
	if !first.IsZero() {
		fmt.Fprintf(&b, "first node in maintenance %.1f s after the start commit; ", first.Sub(t0).Seconds())
	}
	fmt.Fprintf(&b, "%d maintenances, nodes in maintenance %.2f on average (peak %d)", maintStarts, maintArea/span, peakMaint)
	if way != "operator" {
		fmt.Fprintf(&b, ", soaking %.2f (peak %d)", soakArea/span, peakSoak)
	}
	fmt.Fprintf(&b, "; a node's maintenance %s", quantiles(durations))
	if way == "gated" {
		fmt.Fprintf(&b, "; %d releases; release → the operator's first state %s; upgrade-done → gpufleet soaking it %s", releases, quantiles(pickups), quantiles(detections))
	}
	if way != "gpufleet" {
		fmt.Fprintf(&b, "; a freed slot → the next node in maintenance %s", quantiles(refills))
	}
	return b.String()
}

// quantiles writes min / median / max seconds of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.1f / %.1f / %.1f s (%d)", s[0].Seconds(), s[len(s)/2].Seconds(), s[len(s)-1].Seconds(), len(s))
}
