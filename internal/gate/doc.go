// Package gate checks that the live clusters of a wave converged on what the
// fleet file says they should run, before a promotion moves on: Flux applied
// the expected revision, the operators run the expected chart versions, the
// GPU Operator and every NVIDIADriver are ready, every GPU node reports the
// release's driver with no XID/ECC signal, and the cluster's DriverRollout
// completed within its failure budget.
//
// It fails closed: an unreachable cluster, a missing object or a timeout is
// never a pass. Reading a cluster (observe.go) is separate from judging what
// was read (checks.go), which is pure and table-tested. Nothing is written
// to any cluster.
package gate
