package sim

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// operatorModel plays the GPU Operator's upgrade controller
// (k8s-operator-libs pkg/upgrade, ClusterUpgradeStateManager.ApplyState, as
// the operator v25.3.4 runs it) for a world whose first rollout has the
// gpu-operator actuator: render changed the pool's NVIDIADriver in place,
// so every node whose driver pod runs another version is out of date with
// the DaemonSet (updateStrategy OnDelete). What it keeps from the source:
//
//   - a node goes upgrade-required when its pod is out of date (and records
//     a cordon it finds then, which it never lifts), and past that state
//     only without the skip label; the label is read there only;
//   - maxParallelUpgrades counts every node in an upgrade, upgrade-failed
//     included; maxUnavailable (a percentage rounded up) counts cordoned
//     and NotReady nodes plus those about to be cordoned; a node already
//     cordoned goes ahead even when no slot is free;
//   - cordon, wait for jobs (none), delete GPU pods, drain (a drain over its
//     timeout fails the node), restart the driver pod, validation,
//     uncordon unless the cordon was found, upgrade-done;
//   - a driver pod that crash-loops fails the node only after more than ten
//     restarts (crashLoopFail of back-off here).
//
// The driver install, GFD's report and the XIDs are the same fates the
// gpufleet actuator's nodes meet, so both actuators face identical nodes
// on the same seed.
type operatorModel struct {
	r *simRollout
	// pod is the version of each node's driver pod.
	pod []string
	// kept: the operator recorded the node cordoned when its upgrade began.
	kept []bool
	// step counts each node's operator steps, so a stale completion is
	// dropped.
	step []int
	// scheduled: a requeue is pending.
	scheduled bool
	// liftedAdmin are the admin cordons the operator lifted (node and
	// time): what a release without the initial-state record costs.
	liftedAdmin []string

	// What the model keeps of each node between events, so that a pass
	// costs what changed, not the pool (ApplyState rebuilds it all, and a
	// simulation of 50,000 nodes runs a pass at every event): the upgrade
	// state (the label, as setOpState writes it), the skip label, whether
	// the node is unavailable (cordoned or NotReady), and the counts and
	// sets a pass reads. changed lists the nodes written since the last
	// pass (World.bump); want is the version the last pass compared pods
	// with (every node is looked at again when it changes).
	state                    []string
	skip, unavail            []bool
	inProgress, unusable     int
	required, cordonRequired map[int]bool
	changed                  []int
	want                     string
	looked                   bool
}

// OperatorLiftedAdminCordons are the admins' cordons the operator model
// lifted during the run, each as "node at time"; none when gpufleet moved
// the nodes.
func (r *Result) OperatorLiftedAdminCordons() []string {
	if r.world.op == nil {
		return nil
	}
	return r.world.op.liftedAdmin
}

// crashLoopFail is how long a crash-looping driver pod takes to pass ten
// restarts under the kubelet's back-off (10 s doubling to 5 min).
const crashLoopFail = 30 * time.Minute

// operatorRequeue is the operator's planned requeue (upgrade_controller.go:
// plannedRequeueInterval).
const operatorRequeue = 2 * time.Minute

// newOperatorModel returns the model for w's first rollout, or nil when
// gpufleet moves its nodes.
func newOperatorModel(w *World) *operatorModel {
	r := w.rollouts[0]
	if v1alpha1.ActuatorOf(&r.ro.Spec) != v1alpha1.ActuatorGPUOperator {
		return nil
	}
	n := len(w.nodes)
	m := &operatorModel{r: r, pod: make([]string, n), kept: make([]bool, n), step: make([]int, n),
		state: make([]string, n), skip: make([]bool, n), unavail: make([]bool, n),
		required: map[int]bool{}, cordonRequired: map[int]bool{}}
	for i := range w.nodes {
		m.pod[i] = w.nodes[i].DriverVersion
		m.refresh(w, i)
	}
	// The operator looks as soon as render's new version lands.
	w.after(0, func() { w.operatorPass() })
	return m
}

// Operated reports whether the GPU Operator's upgrade controller moves the
// world's nodes (its first rollout has the gpu-operator actuator).
func (w *World) Operated() bool { return w.op != nil }

// OperatorState is the operator's upgrade state of node name.
func (w *World) OperatorState(name string) string {
	if n := w.Node(name); n != nil {
		return n.Labels[v1alpha1.LabelOperatorUpgradeState]
	}
	return ""
}

// CordonHolder says who holds node name's cordon: "admin", "operator", a
// rollout's name, or "" when it is schedulable.
func (w *World) CordonHolder(name string) string {
	if i, ok := w.index[name]; ok {
		return w.holder[i]
	}
	return ""
}

// setLabels writes labels on node i (copy on write: views share maps); an
// empty value removes the key.
func (w *World) setLabels(i int, kv ...string) {
	n := &w.nodes[i]
	l := maps.Clone(n.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for k := 0; k+1 < len(kv); k += 2 {
		if kv[k+1] == "" {
			delete(l, kv[k])
		} else {
			l[kv[k]] = kv[k+1]
		}
	}
	n.Labels = l
	w.bump(i)
}

func (w *World) opState(i int) string { return w.op.state[i] }

func (w *World) setOpState(i int, s string) {
	w.op.step[i]++
	w.setLabels(i, v1alpha1.LabelOperatorUpgradeState, s)
	w.op.setState(i, s)
	w.note("operator", "%s %s", w.nodes[i].Name, s)
}

// setState records node i's upgrade state s, keeping the counts and sets.
func (m *operatorModel) setState(i int, s string) {
	old := m.state[i]
	if v1alpha1.OperatorUpgrading(old) {
		m.inProgress--
	}
	if v1alpha1.OperatorUpgrading(s) {
		m.inProgress++
	}
	m.state[i] = s
	m.sort(i)
}

// sort files node i in the sets a pass takes nodes from.
func (m *operatorModel) sort(i int) {
	if m.state[i] == v1alpha1.OperatorStateUpgradeRequired && !m.skip[i] {
		m.required[i] = true
	} else {
		delete(m.required, i)
	}
	if m.state[i] == v1alpha1.OperatorStateCordonRequired {
		m.cordonRequired[i] = true
	} else {
		delete(m.cordonRequired, i)
	}
}

// refresh reads node i again after a write: its labels (anyone may have
// written them), its cordon and readiness.
func (m *operatorModel) refresh(w *World, i int) {
	n := &w.nodes[i]
	m.skip[i] = n.Labels[v1alpha1.LabelOperatorUpgradeSkip] == "true"
	if st := n.Labels[v1alpha1.LabelOperatorUpgradeState]; st != m.state[i] {
		m.setState(i, st)
	} else {
		m.sort(i)
	}
	if u := n.Unschedulable || !n.Ready; u != m.unavail[i] {
		m.unavail[i] = u
		if u {
			m.unusable++
		} else {
			m.unusable--
		}
	}
}

// actuateOperator performs a transition of the gpu-operator path: the
// progress marks, the skip label, the operator's initial-state record, the
// quarantine marks; then the operator looks at once (it watches node
// labels).
func (w *World) actuateOperator(r *simRollout, t planner.Transition) {
	i := w.index[t.Node]
	n := &w.nodes[i]
	t.ApplyTo(n, r.ro.Name, w.now)
	w.bump(i)
	switch {
	case t.Hold:
		w.setLabels(i, v1alpha1.LabelOperatorUpgradeSkip, "true")
	case t.Release:
		w.setLabels(i, v1alpha1.LabelOperatorUpgradeSkip, "")
	}
	if t.KeepCordon && n.Unschedulable {
		w.op.kept[i] = true
	}
	if t.Pool != "" {
		w.setLabels(i, v1alpha1.LabelPool, t.Pool)
	}
	if t.Driver != "" {
		w.setLabels(i, v1alpha1.LabelDriver, t.Driver)
	}
	if t.Quarantine {
		w.setLabels(i, v1alpha1.LabelQuarantined, "true")
	}
	if f := w.fates[i]; t.To == v1alpha1.NodeSoaking && f.xidAt >= 0 {
		g := w.op.step[i]
		w.after(time.Duration(f.xidAt*float64(r.soak)), func() {
			if w.op.step[i] == g && w.nodes[i].Phase == v1alpha1.NodeSoaking {
				w.Signal(t.Node, "event", "XidError", "Xid 79: GPU has fallen off the bus")
			}
		})
	}
	w.operatorPass()
}

// desired is the version of the pool's NVIDIADriver: the target, or the
// previous one again once the rollout is aborted (render reverts the pool).
func (w *World) desired() string {
	s := &w.op.r.ro.Spec
	if s.Abort {
		return s.PreviousVersion
	}
	return s.TargetVersion
}

// operatorPass is one ApplyState over every node: what it decides is what
// a pass over every node decides, but it looks only at the nodes written
// since the last one (every node when the desired version changed).
func (w *World) operatorPass() {
	m := w.op
	spec := &m.r.ro.Spec
	want := w.desired()
	total := len(w.nodes)
	slices.Sort(m.changed)
	look := slices.Compact(m.changed)
	m.changed = nil
	for _, i := range look {
		m.refresh(w, i)
	}
	if !m.looked || want != m.want {
		m.looked, m.want = true, want
		look = make([]int, total)
		for i := range look {
			look[i] = i
		}
	}
	// Done or unknown nodes whose pod is out of date need an upgrade.
	for _, i := range look {
		st := w.opState(i)
		if st != "" && st != v1alpha1.OperatorStateDone {
			continue
		}
		if m.pod[i] != want {
			if w.nodes[i].Unschedulable {
				m.kept[i] = true
			}
			w.setOpState(i, v1alpha1.OperatorStateUpgradeRequired)
		} else if st == "" {
			w.setOpState(i, v1alpha1.OperatorStateDone)
		}
	}
	// Slots: GetUpgradesAvailable.
	inProgress, unavailable, cordonRequired := m.inProgress, m.unusable, len(m.cordonRequired)
	maxUnavailable := total
	if spec.MaxUnavailable != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, total, true); err == nil {
			maxUnavailable = v
		}
	}
	available := max(int(spec.ParallelNodes), 1) - inProgress
	current := unavailable + cordonRequired
	available = min(available, maxUnavailable)
	if current >= maxUnavailable {
		available = 0
	} else if maxUnavailable < total && current+available > maxUnavailable {
		available = maxUnavailable - current
	}
	waiting := false
	for _, i := range slices.Sorted(maps.Keys(m.required)) {
		if available <= 0 && !w.nodes[i].Unschedulable {
			waiting = true
			continue
		}
		w.setOpState(i, v1alpha1.OperatorStateCordonRequired)
		available--
	}
	for _, i := range slices.Sorted(maps.Keys(m.cordonRequired)) {
		switch w.opState(i) {
		case v1alpha1.OperatorStateCordonRequired:
			if !w.nodes[i].Unschedulable {
				w.nodes[i].Unschedulable = true
				w.holder[i] = "operator"
			}
			// No job selector, then pod deletion and the drain.
			w.setOpState(i, v1alpha1.OperatorStateDrainRequired)
			w.operatorDrain(i)
		}
	}
	if waiting && !m.scheduled {
		m.scheduled = true
		w.after(operatorRequeue, func() { m.scheduled = false; w.operatorPass() })
	}
}

// operatorDrain drains node i, then restarts its driver pod.
func (w *World) operatorDrain(i int) {
	// The operator deletes the node's GPU pods before it drains: it waits
	// for no job (no job selector is set).
	w.evictAll(i, true)
	w.drains[i]++
	m := w.op
	f := w.fates[i]
	g := m.step[i]
	timeout := time.Duration(0)
	if d := m.r.ro.Spec.Timeouts.Drain.Duration; d > 0 {
		timeout = d
	} else {
		timeout = v1alpha1.DefaultDrainTimeout
	}
	if f.drain > timeout {
		w.after(timeout, func() {
			if m.step[i] == g {
				w.setOpState(i, v1alpha1.OperatorStateFailed)
				w.operatorPass()
			}
		})
		return
	}
	w.after(f.drain, func() {
		if m.step[i] != g {
			return
		}
		w.setOpState(i, v1alpha1.OperatorStatePodRestartRequired)
		w.operatorRestart(i)
	})
}

// operatorRestart deletes node i's driver pod; the DaemonSet's new pod
// installs the desired version (the same fate as a label flip).
func (w *World) operatorRestart(i int) {
	m := w.op
	want := w.desired()
	rollback := want == m.r.ro.Spec.PreviousVersion && want != m.r.ro.Spec.TargetVersion
	n := &w.nodes[i]
	n.DriverReady, n.DriverFailed, n.DriverVersion = false, false, ""
	m.pod[i] = want
	w.bump(i)
	f := w.fates[i]
	install, fails := f.install, f.installFails
	if rollback {
		install, fails = f.rollback, f.rollbackFails
	}
	g := m.step[i]
	w.after(install, func() {
		if m.step[i] != g {
			return
		}
		if fails {
			w.nodes[i].DriverFailed = true
			w.bump(i)
			w.after(crashLoopFail, func() {
				if m.step[i] == g {
					w.setOpState(i, v1alpha1.OperatorStateFailed)
					w.operatorPass()
				}
			})
			return
		}
		w.nodes[i].DriverReady = true
		w.setOpState(i, v1alpha1.OperatorStateValidation)
		reported := want
		if !rollback && f.wrongVersion {
			reported = want + "-mismatch"
		}
		g := m.step[i]
		w.after(f.report, func() {
			if m.step[i] != g {
				return
			}
			w.nodes[i].DriverVersion = reported
			// The validator passes; uncordon unless the cordon was found.
			// Whoever holds the cordon: the operator lifts any it did not
			// record when the upgrade began.
			if m.kept[i] {
				m.kept[i] = false
			} else if w.nodes[i].Unschedulable {
				if w.holder[i] == "admin" {
					m.liftedAdmin = append(m.liftedAdmin, w.nodes[i].Name+" at "+w.now.UTC().Format(time.RFC3339))
				}
				w.nodes[i].Unschedulable = false
				w.holder[i] = ""
			}
			w.setOpState(i, v1alpha1.OperatorStateDone)
			w.operatorPass()
		})
	})
}
