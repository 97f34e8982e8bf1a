package sim

import (
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/netop"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// networkModel plays the Network Operator's OFED upgrade controller for a
// world whose first rollout moves the OFED driver too (spec.ofed): the
// same k8s-operator-libs state machine as the GPU Operator's, with driver
// name "ofed", as render configures it (autoUpgrade on, its own drain off,
// maxParallelUpgrades 0: no limit), in package netop's model, which the
// node simulator and the controller share. What it keeps from the source:
//
//   - the NicClusterPolicy has one OFED version for the cluster, the
//     rollout's target (SetOFEDPolicy reverts it, as a release reverted in
//     Git does); a node whose OFED pod runs another version goes
//     upgrade-required, and past that state only without the skip label,
//     read there only;
//   - a node already cordoned is left cordoned at the end (the
//     initial-state annotation); one it cordons itself it uncordons;
//   - no drain (render turns it off): the pod is deleted, the DaemonSet's
//     new one runs the policy's version and is Ready after the OFED
//     install time, the node then says mofed.wait=false and upgrade-done;
//     a bad version (Profile.BadOFED) never becomes Ready: upgrade-failed.
//
// And of the GPU driver beside it: a GPU driver pod started before its
// node's OFED last became Ready is stale (netop.DriverStale); with
// GPUDirect RDMA its nvidia_peermem crash-loops, so the pod is not Ready
// until it is restarted, and a GPU driver pod is Ready only once OFED is.
//
// Every node of such a world has NICs the Network Operator manages: one
// present at the start without an OFED pod gets the policy's, as does a
// node that joins. The holds of the rollout's first pass land before the
// model first looks, as the controller's first pass holds every node
// within a second of the release reaching the cluster.
type networkModel struct {
	policy  string
	peermem bool
	bad     string
	install Dist
	// rng draws the OFED install times: a stream of its own, so that the
	// nodes' other fates are those of a world without OFED on the seed.
	rng *rand.Rand
	// kept: the node was cordoned when its OFED upgrade began.
	kept []bool
	// step counts each node's OFED pods, so a stale completion is dropped.
	step []int
	// loaded is when each node's GPU driver pod last started, for
	// netop.DriverStale.
	loaded []time.Time
	// changed lists the nodes written since the last pass (World.bump);
	// looked says the model has looked at every node once.
	changed []int
	looked  bool
	// pods are the OFED pods started since the last observed step, for
	// simcheck (kept only when a run is observed).
	pods []OFEDPod
}

// OFEDPod is an OFED pod the Network Operator started on a node, with the
// node as it was then, so that a checker judges whether its maintenance
// held it (sim.Step.OFEDPods).
type OFEDPod struct {
	Node    string
	At      time.Time
	Version string
	// Owner, Phase, Unschedulable and Drained are the node's at the time.
	Owner         string
	Phase         v1alpha1.NodePhase
	Unschedulable bool
	Drained       bool
	// Selected names the live rollouts with spec.ofed that select the node.
	Selected []string
}

// ofedSuffix is what the OFED container's image tag adds to the version.
const ofedSuffix = "-ubuntu22.04-amd64"

// DefaultOFEDInstall is the OFED install time of a Profile that gives none.
const DefaultOFEDInstall = 5 * time.Minute

// newNetworkModel returns the model of w's first rollout, or nil when it
// moves no OFED (or the GPU Operator moves its nodes: spec.ofed needs
// gpufleet's actuator).
func newNetworkModel(w *World, seed uint64) *networkModel {
	spec := &w.rollout.Spec
	if spec.OFED == nil || w.op != nil {
		return nil
	}
	install := w.prof.OFEDInstall
	if install.Median <= 0 {
		install = Fixed(DefaultOFEDInstall)
	}
	n := len(w.nodes)
	return &networkModel{policy: spec.OFED.TargetVersion, peermem: spec.OFED.Peermem, bad: w.prof.BadOFED, install: install,
		rng: rand.New(rand.NewPCG(seed, 0x0fed)), kept: make([]bool, n), step: make([]int, n), loaded: make([]time.Time, n)}
}

// RunOFED gives each node a Ready OFED pod of version (upgrade-done,
// mofed.wait=false), as the Network Operator leaves a node; nodes sharing
// one label map keep sharing one.
func RunOFED(nodes []planner.Node, version string) {
	type copied struct{ from, to map[string]string }
	var copies []copied
	for i := range nodes {
		n := &nodes[i]
		n.OFEDVersion, n.OFEDReady, n.OFEDFailed = version+ofedSuffix, true, false
		k := slices.IndexFunc(copies, func(c copied) bool { return maps.Equal(c.from, n.Labels) })
		if k < 0 {
			l := maps.Clone(n.Labels)
			if l == nil {
				l = map[string]string{}
			}
			l[v1alpha1.LabelMOFEDWait] = "false"
			l[v1alpha1.LabelOFEDUpgradeState] = v1alpha1.OperatorStateDone
			copies = append(copies, copied{n.Labels, l})
			k = len(copies) - 1
		}
		n.Labels = copies[k].to
	}
}

// OFEDPolicy is the OFED version the world's NicClusterPolicy names; empty
// when the world plays no Network Operator.
func (w *World) OFEDPolicy() string {
	if w.net == nil {
		return ""
	}
	return w.net.policy
}

// SetOFEDPolicy makes the NicClusterPolicy name version, as a release
// reverted in Git does: every node is looked at again.
func (w *World) SetOFEDPolicy(version string) {
	if w.net == nil || w.net.policy == version {
		return
	}
	w.net.policy = version
	w.net.looked = false
	w.note("world", "the NicClusterPolicy names OFED %s", version)
}

// networkPass is one pass of the Network Operator's upgrade controller
// over the nodes written since the last one (every node on its first look
// or after the policy changed).
func (w *World) networkPass() {
	m := w.net
	if m == nil {
		return
	}
	look := m.changed
	m.changed = nil
	if !m.looked {
		m.looked = true
		look = make([]int, len(w.nodes))
		for i := range look {
			look[i] = i
		}
	} else {
		slices.Sort(look)
		look = slices.Compact(look)
	}
	for _, i := range look {
		w.ofedLook(i)
	}
}

// ofedLook moves node i as far as the upgrade controller takes it now
// (netop.Look).
func (w *World) ofedLook(i int) {
	m := w.net
	n := &w.nodes[i]
	if len(n.Labels) == 0 {
		return // not in the cluster
	}
	if n.OFEDVersion == "" {
		// A node without an OFED pod: the DaemonSet gives it one of the
		// policy's version (a new node, no driver loaded yet to unload).
		ok := m.policy != m.bad
		n.OFEDVersion, n.OFEDReady, n.OFEDFailed = m.policy+ofedSuffix, ok, !ok
		states := netop.Replaced(ok)
		w.setLabels(i, v1alpha1.LabelOFEDUpgradeState, states[len(states)-1], v1alpha1.LabelMOFEDWait, netop.WaitLabel(ok))
		return
	}
	// A failed pod that is out of date is taken again (simplified: the
	// library waits for it to be in sync; a person deletes it).
	moves, replace := netop.Look(n.Labels[v1alpha1.LabelOFEDUpgradeState],
		v1alpha1.OFEDMatches(n.OFEDVersion, m.policy), n.Labels[v1alpha1.LabelOFEDUpgradeSkip] == "true")
	if replace {
		// Cordoned first, unless it is already: then it stays so.
		m.kept[i] = n.Unschedulable
		if !n.Unschedulable {
			n.Unschedulable = true
			w.holder[i] = "network-operator"
		}
	}
	w.setOFEDStates(i, moves)
	if replace {
		w.ofedReplace(i)
	}
}

// setOFEDStates writes node i's OFED upgrade states, in order.
func (w *World) setOFEDStates(i int, states []string) {
	for _, s := range states {
		w.setLabels(i, v1alpha1.LabelOFEDUpgradeState, s)
		w.note("network-operator", "%s %s", w.nodes[i].Name, s)
	}
}

// ofedReplace restarts node i's OFED pod on the policy's version: no jobs
// to wait for and no drain (render turns them off).
func (w *World) ofedReplace(i int) {
	m := w.net
	n := &w.nodes[i]
	m.step[i]++
	g := m.step[i]
	n.OFEDVersion, n.OFEDReady, n.OFEDFailed = m.policy+ofedSuffix, false, false
	w.setLabels(i, v1alpha1.LabelMOFEDWait, netop.WaitLabel(false))
	if w.observe != nil {
		m.pods = append(m.pods, OFEDPod{Node: n.Name, At: w.now, Version: m.policy, Owner: n.Owner, Phase: n.Phase,
			Unschedulable: n.Unschedulable, Drained: n.Drained, Selected: w.ofedSelecting(n)})
	}
	bad := m.policy == m.bad
	w.after(m.install.Draw(m.rng), func() {
		if m.step[i] != g {
			return
		}
		if bad {
			w.nodes[i].OFEDFailed = true
			w.setOFEDStates(i, netop.Replaced(false))
			return
		}
		w.ofedReady(i)
	})
}

// ofedReady is node i's new OFED pod Ready: the node says so, a GPU
// driver pod started before it is stale, and the upgrade ends (uncordoned
// unless the node was cordoned when it began).
func (w *World) ofedReady(i int) {
	m := w.net
	n := &w.nodes[i]
	n.OFEDReady = true
	if _, ok := n.Labels[v1alpha1.LabelDriver]; (ok || n.DriverVersion != "") && netop.DriverStale(m.loaded[i], w.now) {
		n.DriverStale = true
		if m.peermem {
			n.DriverReady = false // nvidia_peermem crash-loops against the new OFED
		}
	}
	w.setLabels(i, v1alpha1.LabelMOFEDWait, netop.WaitLabel(true))
	done := netop.Replaced(true)
	w.setOFEDStates(i, done[:len(done)-1])
	if !m.kept[i] && n.Unschedulable {
		n.Unschedulable = false
		w.holder[i] = ""
	}
	m.kept[i] = false
	w.setOFEDStates(i, done[len(done)-1:])
}

// driverStarts records that node i's GPU driver pod starts now.
func (w *World) driverStarts(i int) {
	if w.net != nil {
		w.net.loaded[i] = w.now
	}
}

// ofedSelecting names the live rollouts with spec.ofed that select n.
func (w *World) ofedSelecting(n *planner.Node) []string {
	var out []string
	for _, r := range w.rollouts {
		if r.gone || r.ro.Spec.OFED == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(&r.ro.Spec.NodeSelector); err == nil && sel.Matches(labels.Set(n.Labels)) {
			out = append(out, r.ro.Name)
		}
	}
	return out
}

// ofedActuate performs the OFED part of transition t on node i: the skip
// label held or released, the GPU driver pod restarted.
func (w *World) ofedActuate(i int, t planner.Transition) {
	switch {
	case t.HoldOFED:
		w.setLabels(i, v1alpha1.LabelOFEDUpgradeSkip, "true")
	case t.ReleaseOFED:
		w.setLabels(i, v1alpha1.LabelOFEDUpgradeSkip, "")
	}
	if t.RestartDriver {
		w.restartDriver(i)
	}
}

// restartDriver deletes node i's GPU driver pod; the DaemonSet's new one,
// of the same version, is Ready an install time later (it ran on the node
// before, so it does not fail), and loads nvidia_peermem against the OFED
// now there.
func (w *World) restartDriver(i int) {
	w.gen[i]++
	g := w.gen[i]
	n := &w.nodes[i]
	n.DriverReady, n.DriverFailed, n.DriverStale = false, false, false
	w.driverStarts(i)
	w.after(w.fates[i].install, func() {
		if w.gen[i] != g {
			return
		}
		w.nodes[i].DriverReady = w.driverCanBeReady(i)
		w.bump(i)
	})
}

// driverCanBeReady reports whether node i's new GPU driver pod can be
// Ready: with GPUDirect RDMA only once its OFED is.
func (w *World) driverCanBeReady(i int) bool {
	return w.net == nil || !w.net.peermem || w.nodes[i].OFEDReady
}

// ofedJoin gives a node that joins an OFED pod of the policy's version
// (the DaemonSet's).
func (w *World) ofedJoin(i int) {
	if w.ofedGone(i) {
		w.ofedLook(i)
	}
}

// ofedGone drops node i's OFED pod (and what was under way for it), as a
// node that leaves takes it with it; false in a world without the Network
// Operator.
func (w *World) ofedGone(i int) bool {
	if w.net == nil {
		return false
	}
	n := &w.nodes[i]
	n.OFEDVersion, n.OFEDReady, n.OFEDFailed, n.DriverStale = "", false, false, false
	w.net.step[i]++
	return true
}

// takeOFEDPods returns the OFED pods started since the last call.
func (w *World) takeOFEDPods() []OFEDPod {
	if w.net == nil || len(w.net.pods) == 0 {
		return nil
	}
	p := w.net.pods
	w.net.pods = nil
	return p
}
