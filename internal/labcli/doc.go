// Package labcli is the command line of gpufleet-lab, the lab binary: the
// verbs that play gpufleet's story on a local testbed (today "demo"). It is
// wiring only, as package cli is for gpufleet: each verb is an options
// struct whose run calls a library (package demo) with its output writer.
//
// The lab is its own binary so that the testbed (envtest, the git server,
// Flux's controllers, the node agent) never links into the gpufleet CLI
// users install. Its exit codes are gpufleet's (package cli).
package labcli
