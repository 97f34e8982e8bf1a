// Package explain says why a cluster does not run what git says. It walks
// the chain that decides it, in the order each link waits on the one
// before: the GitRepository fetched at the expected revision; each Flux
// Kustomization of the cluster (operators, config, lifecycle, then the
// serving stack) applied, its dependsOn met, its health checks passing
// within a timeout no shorter than the service's declared start-up, not
// suspended (on a cluster on Argo CD, instead: its Applications synced by
// themselves, no sync running or failing, Synced at the revision and
// Healthy, argocd.go); the operators' HelmReleases (or, with pre-rendered charts,
// their Deployments); the ClusterPolicy and the NVIDIADrivers; the driver
// DaemonSets and their pods; the DriverRollout and each node's phase. The
// answer names the first broken link with the object, its condition
// message and the command that would fix or inspect it.
//
// It reads what package gate reads, with gate's code (gate.ClientFor,
// gate.Expect, gate.Observe, gate.Evaluate), and a few objects more; a
// link gate passes is a link explain calls ok, so the two never disagree
// on whether a cluster converged. Each link names the gate's checks it
// answers for (Link.Checks, by gate.CheckID); a check the gate fails is
// named by a link that is not ok, which TestEveryFailedCheckHasALink
// asserts over random cluster states, and a check no link answers for gets
// one of its own (StepCheck) rather than a "converged". Like gate it is
// read-only and fails closed: a cluster it cannot read is an error, never
// an answer.
//
// Reading (observe.go) is apart from judging (walk.go, pure); Answer is
// self-describing and JSON-tagged so other programs can show it, and the
// text and JSON renderers (render.go) print nothing else.
package explain
