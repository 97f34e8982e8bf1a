// Package simcheck judges simulated rollouts: its Checker checks the
// rollout's safety invariants at every step of a run of package sim and its
// convergence at the end, recomputing everything from the nodes and the
// spec rather than trusting the planner's own bookkeeping.
//
// It is test support: the simulator's and the planner's tests (golden
// transcripts, the randomized invariant runs, make soak-sim) use it, and
// no binary links it, which is why it is not part of package sim.
package simcheck
