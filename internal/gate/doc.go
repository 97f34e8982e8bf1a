// Package gate checks that the live clusters of a wave converged on what the
// fleet file says they should run, before a promotion moves on: Flux (or,
// on a cluster on Argo CD, Argo CD: argocd.go) applied the expected revision, the operators run the expected chart versions, the
// GPU Operator and every NVIDIADriver are ready, every GPU node reports the
// release's driver with no XID/ECC signal, and the cluster's DriverRollout
// completed within its failure budget.
//
// It fails closed: an unreachable cluster, a missing object or a timeout is
// never a pass. Reading a cluster (observe.go) is separate from judging what
// was read (checks.go), which is pure and table-tested. Nothing is written
// to any cluster.
//
// The gate is the one judge of a cluster; explain, the dashboard and
// `gpufleet status --live` show its verdict, and ask it by type, never by
// text (contract.go, kinds.go): each check is named by a CheckID, its
// CheckKind and the object it judges, whose text is the name reports have
// always printed; the kinds of object the gate reads are ReadKinds, from
// which its REST mapper, the dashboard's informers and explain's reads
// alike are made. A new kind of check is added in contract.go, judged in
// checks.go, and answered for by a link of explain, whose tests name a kind
// without one.
package gate
