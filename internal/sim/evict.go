package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// What the rollout does to the workload's jobs, where the world acts: a
// drain evicts the GPU pods of its node (or first waits for the ones
// spec.evict.waitForCompletion names), a driver swapped under a GPU pod
// fails it, and a node that leaves takes its pods with it. Without a
// workload each is what the world did before it had one.

// drainWait is a draining node waiting for the jobs the rollout's
// spec.evict.waitForCompletion names: nothing on it is evicted until they
// are gone or the wait's timeout, then the drain goes on as without it.
type drainWait struct {
	// gen is the node's generation when its drain started: a later one
	// (its driver changed, it left) ends the wait.
	gen  int
	spec *v1alpha1.DriverRolloutSpec
	// until is the wait's timeout.
	until time.Time
}

// startDrain drains node i, which rollout r just moved to Draining: its
// pods are evicted and, the drain's time later, it is drained. With a
// workload the GPU pods go at once, unless the rollout waits for the jobs
// on it that it names: then the drain waits for them first.
func (w *World) startDrain(i int, r *simRollout) {
	w.drains[i]++
	g := w.gen[i]
	if m := w.work; m != nil {
		m.clock = w.now
		if m.waitFor(i, &r.ro.Spec, g) {
			return
		}
		m.drainNode(i)
	}
	w.drained(i, g, w.now)
}

// drained plans node i's drain, under generation g, to end the drain's
// time after from.
func (w *World) drained(i, g int, from time.Time) {
	w.after(from.Add(w.fates[i].drain).Sub(w.now), func() {
		if w.gen[i] == g && w.nodes[i].Phase == v1alpha1.NodeDraining {
			w.nodes[i].Drained = true
		}
	})
}

// waitFor starts node i's wait for the jobs spec names on it, when it
// names some; it reports whether the drain waits. The world wakes at the
// timeout and when each job named is due to end, as the controller
// requeues for them.
func (m *jobs) waitFor(i int, spec *v1alpha1.DriverRolloutSpec, g int) bool {
	wait := planner.SettingsFor(spec, 0).JobWait
	if wait <= 0 || len(m.named(i, spec)) == 0 {
		return false
	}
	dw := &drainWait{gen: g, spec: spec, until: m.clock.Add(wait)}
	m.drains[i] = dw
	m.res.DrainsWaited++
	wake := func() {
		if m.drains[i] == dw {
			m.endWait(i)
		}
	}
	m.w.after(wait, wake)
	for _, j := range m.named(i, spec) {
		if end := j.runStart.Add(j.work - j.saved); end.Before(dw.until) {
			m.w.after(end.Sub(m.clock), wake)
		}
	}
	return true
}

// named are the jobs on node i whose pods spec.evict.waitForCompletion
// selects (planner.JobPods: the controller's one reading of it).
func (m *jobs) named(i int, spec *v1alpha1.DriverRolloutSpec) []*job {
	var out []*job
	for _, j := range m.on[i] {
		// Only the pods the drain would evict are waited for
		// (planner.JobPods of the pods to drain).
		if j.gpuPod && selects(spec, j) {
			out = append(out, j)
		}
	}
	return out
}

// selects reports whether spec.evict.waitForCompletion names j's pods.
func selects(spec *v1alpha1.DriverRolloutSpec, j *job) bool {
	pod := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: j.class.Name, Labels: j.class.Labels}}}
	return len(planner.JobPods(spec, pod)) > 0
}

// finishedWaitedFor counts j, which just finished, when a drain was
// waiting for it on one of its nodes: a job the wait spared.
func (m *jobs) finishedWaitedFor(j *job) {
	for _, i := range j.nodes {
		if dw := m.drains[i]; dw != nil && selects(dw.spec, j) {
			m.res.JobsWaitedFor++
			return
		}
	}
}

// jobLeft is told that a job left node i: a drain waiting for the jobs
// named on it goes on once none is left.
func (m *jobs) jobLeft(i int) {
	if dw := m.drains[i]; dw != nil && len(m.named(i, dw.spec)) == 0 {
		m.endWait(i)
	}
}

// endWait ends node i's wait, at the timeout or once the jobs named have
// gone, whichever is first: what is left is evicted, and the drain goes
// on. A node whose drain is over meanwhile (aborted, its driver changed)
// evicts nothing.
func (m *jobs) endWait(i int) {
	dw := m.drains[i]
	delete(m.drains, i)
	w := m.w
	if w.gen[i] != dw.gen || w.nodes[i].Phase != v1alpha1.NodeDraining {
		return
	}
	was := m.clock
	m.clock = earliest(m.clock, dw.until)
	m.drainNode(i)
	w.drained(i, dw.gen, m.clock)
	m.clock = was
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// evictAll interrupts the GPU pods on node i, as a driver swapped under
// them does; counted: against the rollout (not for a node that leaves).
func (w *World) evictAll(i int, counted bool) {
	if w.work != nil {
		w.work.clock = w.now
		w.work.evictNode(i, counted)
	}
}

// advanceWorkload brings the jobs up to now, at the start of a round.
func (w *World) advanceWorkload() {
	if w.work != nil {
		w.work.advance(w.now)
	}
}

// observeWork writes on every node what the controller observes of its
// GPU pods now, before the round's passes read them.
func (w *World) observeWork() {
	if w.work == nil {
		return
	}
	m := w.work
	m.clock = w.now
	if m.cfg.Unobserved {
		return
	}
	now := int64(m.clock.Sub(m.epoch))
	for i := range w.nodes {
		m.observeAt(i, &w.nodes[i], now)
	}
}

// observeNode writes node i's GPU pods again after one left it.
func (w *World) observeNode(i int) {
	if w.work != nil {
		w.work.observe(i, &w.nodes[i])
	}
}
