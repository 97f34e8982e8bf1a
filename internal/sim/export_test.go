package sim

import "time"

// Hooks are the test hooks of a run (see hooks), for this package's tests:
// only they may set one.
type Hooks = hooks

// Hooked is a rehearsal with test hooks. Config and Hooks are embedded, so
// a test sets cfg.Racing or cfg.Observe on the same value it set
// cfg.Rollout on.
type Hooked struct {
	Config
	Hooks
}

// RunHooked runs c.Config with c.Hooks.
func RunHooked(c Hooked) (*Result, error) { return run(c.Config, c.Hooks) }

// HandJob is a job a test puts on the world's nodes by hand (StartJob):
// the nodes it holds, its GPUs on each, how long it has run and still
// needs, how often it checkpoints (zero: never), its pods' labels, and
// whether it spans a maintenance domain (its next run too).
type HandJob struct {
	Nodes      []string
	GPUs       int
	Ran, Left  time.Duration
	Checkpoint time.Duration
	Labels     map[string]string
	Domain     bool
	// Claim is the DRA driver its pods hold their GPUs by (JobClass.Claim).
	Claim string
}

// StartJob starts hj now on its nodes, as if it had run for hj.Ran, in a
// world with a workload (a scripted event's Do calls it).
func StartJob(w *World, hj HandJob) {
	m := w.work
	m.clock = w.now
	c := &JobClass{Name: "by hand", Weight: 1, Nodes: len(hj.Nodes), Checkpoint: hj.Checkpoint, Labels: hj.Labels, Domain: hj.Domain, Claim: hj.Claim}
	j := &job{id: m.nextID, class: c, gpus: hj.GPUs, work: hj.Ran + hj.Left, submitted: w.now.Add(-hj.Ran), gpuPod: m.gpuPod(c)}
	m.nextID++
	var nodes []int
	for _, name := range hj.Nodes {
		nodes = append(nodes, w.index[name])
	}
	m.clock = w.now.Add(-hj.Ran) // its run started then
	m.occupy(j, nodes)
	m.clock = w.now
	m.planEnd(j)
}

// JobsOn counts the jobs with a pod on node name now.
func JobsOn(r *Result, name string) int { return len(r.world.work.on[r.world.index[name]]) }
