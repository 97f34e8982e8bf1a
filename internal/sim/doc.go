// Package sim is a discrete-event simulator of a cluster's GPU nodes under a
// DriverRollout: the "world" the planner acts on. It models what the
// lifecycle controller and the node agent do for each transition (cordon,
// drain, flip the driver label, the driver pod installing, GPU Feature
// Discovery reporting a version, health signals during the soak, a rollback
// succeeding or not) with durations drawn from seeded distributions, and
// jumps the clock from one event to the next, so a rollout of thousands of
// nodes over days of maintenance windows runs in well under a second.
//
// The same planner.Plan that the controller runs drives it. Golden
// transcripts of whole rollouts, the randomized invariant runs and
// `gpufleet simulate` are all built on Run.
//
// A world may hold several rollouts at once (World.Create, Delete and
// ForceDelete in a script), each planned from its own view of the nodes as
// the controller observes them. Tests run it with hooks that only they can
// set (a broken planner, an observer, racing controllers that plan from the
// same moment and write with the nodes' versions as preconditions); a
// rehearsal's Config has none. The Checker of package simcheck (test
// support, so not linked into any binary) judges ownership and cordons from
// the world's own record of who owns each node and who holds each cordon.
//
// With Config.Workload the nodes run GPU jobs (workload.go, jobs.go): jobs
// of one node or several, or of a whole maintenance domain, arrive, are
// placed by a small bin-packing scheduler, checkpoint and finish; a drain
// evicts the ones on its node (evict.go), or first waits for the ones
// spec.evict.waitForCompletion names, and the work each loses since its
// last checkpoint, on all of its GPUs, is what the rollout destroyed
// (Result.Workload). The planner sees each node's GPU pods and work in
// flight as the controller observes them from its cache, so it starts the
// cheapest nodes first; Workload.Unobserved hides them, for the fixed
// order a comparison measures it against. The jobs draw from streams of
// their own, so every planner meets the same jobs on a seed.
//
// Run is a small runner (run.go) whose methods are the steps of a round:
// the events due happen, each live rollout reads its view, plans, writes
// under the resourceVersion precondition, records and is observed; the
// first rollout is approved when it asks; the run rests or the clock moves
// to the next event, tick or window edge.
package sim
