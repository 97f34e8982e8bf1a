package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// DRA nodes (v1alpha1.DRASpec): a node that runs NVIDIA's DRA kubelet
// plugin has its driver swapped in this order, each step decided here from
// what the controller observed (Node.DRA and its neighbours):
//
//  1. Draining: the GPU pods are evicted, those holding a GPU claim among
//     them (HoldsGPU); then the node waits until no claim of a GPU DRA
//     driver is allocated on it and reserved (Node.DRAClaims): unpreparing
//     a claim needs the plugin, so the plugin must outlive the workloads
//     (k8s-driver-manager PR #217).
//  2. Still Draining: the plugin is stopped (PluginPause: the node's
//     v1alpha1.LabelDRAPlugin says paused, and the plugin's DaemonSet
//     leaves it), and the node waits until its plugin pod is gone: a
//     plugin left running keeps the old driver open and serves stale
//     devices after the reload (k8s-driver-manager PR #203, gpu-operator
//     #2509).
//  3. Installing: the driver label moves; the plugin stays stopped.
//  4. Installing → Validating, the new driver pod Ready: the plugin is let
//     back (PluginResume).
//  5. Validating → Soaking only once the plugin pod is Ready again and the
//     node's ResourceSlices publish the new driver version
//     (v1alpha1.DRAAttributeDriverVersion): a scheduler reading the old
//     slices would place claims by devices that changed.
//
// Every step is bounded by its phase's timeout: a claim that never
// releases fails the node at the drain timeout, naming the claim, rather
// than holding the rollout. A node leaving flight (Done, rolled back) has
// the label taken away; a node sent back (RollingBack) after its driver
// label moved has the plugin stopped in the same write as the label's move
// back, and let back when it returns.

// PluginMove is what a transition does to a node's DRA kubelet plugin
// (v1alpha1.LabelDRAPlugin).
type PluginMove int

const (
	// PluginKeep leaves the label as it is.
	PluginKeep PluginMove = iota
	// PluginPause sets it to paused: the plugin leaves the node.
	PluginPause
	// PluginResume sets it to resumed: the plugin comes back, and the node
	// is still known to be a DRA node while it does.
	PluginResume
	// PluginRelease removes it: the node is back in service.
	PluginRelease
)

// pluginLabel is the node's DRA plugin label as this pass leaves it.
func (w *work) pluginLabel() string {
	if w.plugin != "" {
		if w.plugin == "-" {
			return ""
		}
		return w.plugin
	}
	return w.n.Labels[v1alpha1.LabelDRAPlugin]
}

// isDRA: the node runs the DRA kubelet plugin, or the rollout stopped it.
func (w *work) isDRA() bool { return w.n.DRA || w.pluginLabel() != "" }

// pluginMove is what move does to the plugin of w, moving it to phase to,
// unless edit says otherwise: stopped with the driver label of a rollback,
// let back with the node's return to service.
func (w *work) pluginMove(to v1alpha1.NodePhase) PluginMove {
	switch to {
	case v1alpha1.NodeRollingBack:
		// A node sent back from its drain never left its driver: its
		// plugin stays, to unprepare what claims are left.
		if w.phase != v1alpha1.NodeDraining && w.isDRA() && w.pluginLabel() != v1alpha1.DRAPluginPaused {
			return PluginPause
		}
	case v1alpha1.NodeDone, v1alpha1.NodeRolledBack, v1alpha1.NodePending:
		if w.pluginLabel() != "" {
			return PluginRelease
		}
	}
	return PluginKeep
}

// applyPlugin records a plugin move on the running view.
func (w *work) applyPlugin(m PluginMove) {
	switch m {
	case PluginPause:
		w.plugin = v1alpha1.DRAPluginPaused
	case PluginResume:
		w.plugin = v1alpha1.DRAPluginResumed
	case PluginRelease:
		w.plugin = "-"
	}
}

// drainingDRA takes a drained DRA node through its claims and its plugin;
// it reports whether the node may go on to its driver swap in this pass.
func (p *planner) drainingDRA(w *work) bool {
	if !w.isDRA() {
		return true
	}
	if len(w.n.DRAClaims) > 0 {
		return false // failure says it at the drain timeout
	}
	if w.pluginLabel() != v1alpha1.DRAPluginPaused {
		p.move(w, v1alpha1.NodeDraining, fmt.Sprintf("GPU pods gone and their DRA claims released after %s; stopping the DRA kubelet plugin before the driver swap", p.elapsed(w)), func(t *Transition) {
			t.Plugin = PluginPause
		})
		return false
	}
	return !w.n.DRAPluginRunning
}

// drainWaitDRA says what a draining DRA node that overran its drain
// timeout still waits for: its claims, named, or its plugin; empty when
// nothing of DRA holds it.
func drainWaitDRA(w *work) string {
	switch {
	case len(w.n.DRAClaims) > 0:
		return claimsStill(w.n.DRAClaims)
	case w.n.Drained && w.pluginLabel() == v1alpha1.DRAPluginPaused && w.n.DRAPluginRunning:
		return "the DRA kubelet plugin still running (does its DaemonSet's node affinity exclude " + v1alpha1.LabelDRAPlugin + "=" + v1alpha1.DRAPluginPaused + "?)"
	}
	return ""
}

// claimsStill names the claims still allocated, at most three: "claim
// ml/train-0 still allocated", "claims ml/a, ml/b and 2 more still
// allocated".
func claimsStill(claims []string) string {
	if len(claims) == 1 {
		return "claim " + claims[0] + " still allocated"
	}
	shown := claims
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(claims)-3)
	}
	return "claims " + strings.Join(shown, ", ") + more + " still allocated"
}

// draThrough reports whether a validating node's DRA plugin is back on the
// new driver: not a DRA node, or its plugin pod Ready and every driver
// version its ResourceSlices publish the target's.
func (p *planner) draThrough(w *work) bool {
	if !w.isDRA() {
		return true
	}
	return w.n.DRAPluginReady && SlicesOn(w.n.DRASliceVersions, p.spec.TargetVersion)
}

// draValidateWait says what a validating DRA node still waits for, for
// its failure at the validate timeout; empty when nothing.
func (p *planner) draValidateWait(w *work) string {
	switch {
	case !w.isDRA():
		return ""
	case !w.n.DRAPluginReady:
		return "DRA kubelet plugin not Ready"
	case !SlicesOn(w.n.DRASliceVersions, p.spec.TargetVersion):
		got := "no driverVersion"
		if len(w.n.DRASliceVersions) > 0 {
			got = "driverVersion " + strings.Join(w.n.DRASliceVersions, ", ")
		}
		return fmt.Sprintf("ResourceSlices publish %s, want %s", got, SemverForm(p.spec.TargetVersion))
	}
	return ""
}

// SlicesOn reports whether the driver versions a node's ResourceSlices
// publish (each once) are all the target's: at least one, and each, in
// semver form, the target or a build of its precompiled branch
// (DriverMatches).
func SlicesOn(published []string, target string) bool {
	if len(published) == 0 {
		return false
	}
	for _, v := range published {
		if !DriverMatches(SemverForm(v), SemverForm(target)) {
			return false
		}
	}
	return true
}

// SemverForm writes a driver version as DRA device attributes carry it,
// each part without leading zeros: "580.95.05" is "580.95.5". A part that
// is not a number is left as it is.
func SemverForm(v string) string {
	parts := strings.Split(v, ".")
	for i, s := range parts {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			parts[i] = strconv.FormatUint(n, 10)
		}
	}
	return strings.Join(parts, ".")
}

// DRAWaitOf says what a node of a rollout to target, in phase ph, carrying
// labels, waits for in its DRA steps, as far as its labels tell it; empty
// when they tell nothing. `gpufleet explain` says it of a node in flight.
func DRAWaitOf(ph v1alpha1.NodePhase, labels map[string]string, target string) string {
	switch label := labels[v1alpha1.LabelDRAPlugin]; {
	case label == v1alpha1.DRAPluginPaused && ph == v1alpha1.NodeDraining:
		return "its DRA kubelet plugin to stop (" + v1alpha1.LabelDRAPlugin + "=" + v1alpha1.DRAPluginPaused + ") before the driver label moves"
	case label == v1alpha1.DRAPluginPaused && ph == v1alpha1.NodeInstalling:
		return "the new driver's pod to be Ready; its DRA kubelet plugin stays stopped until then"
	case label == v1alpha1.DRAPluginPaused && ph == v1alpha1.NodeRollingBack:
		return "the previous driver; its DRA kubelet plugin stays stopped until the node is back"
	case label == v1alpha1.DRAPluginResumed && ph == v1alpha1.NodeValidating:
		return "its DRA kubelet plugin to be Ready again and its ResourceSlices to publish driverVersion " + SemverForm(target)
	}
	return ""
}
