// Package lab is gpufleet's lab: the fleet its story plays on, the story's
// fixture fleet file, the demo that plays it with progress output, a
// summary and an HTML report, and the command line of gpufleet-lab, the
// binary that carries it. The end-to-end suite (test/e2e) starts its
// worlds here too.
//
// [Start] starts the testbed with Kube, Kwok, Flux (with the real
// notification-controller for the serving stack) and a git server, and per
// cluster a node agent (package nodesim), the real GPU Operator once Flux
// has applied its chart, and the lifecycle controller in process; then it
// writes the fleet file into a work tree of an empty repository on the git
// server and points each cluster's root GitRepository and Kustomization at
// it, as "flux bootstrap" would. The [World]'s methods are the steps:
// [World.Git] and [World.Push] commit and publish, [World.WaitApplied],
// [World.WaitRollout] and [World.WaitDrivers] wait for Flux, the
// controller and the nodes.
//
// A cluster the fleet file puts on Argo CD runs the real Argo CD instead of
// Flux, bootstrapped by a step of the story ([Play.Bootstrap]), and the
// waits ask Argo CD ([Play.WaitApplied]); [ArgoCDStory] plays a release's
// life with staging on Argo CD and prod on Flux.
//
// [Demo] plays the story of [StoryFleet] on two clusters, staging and prod:
// the library calls behind the commands (render, start, approve, promote,
// gate, abort), each a real git commit pushed to the git server and
// applied by Flux. [Main] is gpufleet-lab's command line, wiring only, as
// package cli is for gpufleet: each verb is an options struct whose run
// calls the library with its output writer; its exit codes are gpufleet's.
//
// Every call returns an error and nothing here knows about testing.T: the
// demo reports a failed step and carries on to its summary, the suite's
// thin wrapper turns errors into t.Fatal. The lab is its own binary so
// that the testbed (envtest, the git server, Flux's controllers, the node
// agent) never links into the gpufleet CLI or the controller users install.
package lab
