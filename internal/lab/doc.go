// Package lab is the story harness shared by the lab's demo
// (gpufleet-lab demo, package demo) and the end-to-end suite (test/e2e):
// one place that starts the fleet the story plays on and the steps both
// take on it.
//
// [Start] starts the testbed with Kube, Kwok, Flux and a git server, and
// per cluster a node agent in kwok mode (package nodesim), the real GPU
// Operator once Flux has applied its chart, the notification-controller
// stand-in (package stand) and the lifecycle controller in process; then it
// writes the fleet file into a work tree of an empty repository on the git
// server and points each cluster's root GitRepository and Kustomization at
// it, as "flux bootstrap" would. The [World]'s methods are the steps:
// [World.Git] and [World.Push] commit and publish, [World.WaitApplied],
// [World.WaitRollout] and [World.WaitDrivers] wait for Flux, the
// controller and the nodes.
//
// Every call returns an error and nothing here knows about testing.T: the
// demo reports a failed step and carries on to its summary, the suite's
// thin wrapper turns errors into t.Fatal. Like testbed, this is lab and
// test support: the gpufleet CLI and the controller never link it.
package lab
