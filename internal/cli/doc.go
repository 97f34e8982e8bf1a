// Package cli holds gpufleet's commands. Each command is an options struct
// with validate() and run(ctx), taking its output writers as arguments; the
// logic lives in library packages that tests call directly. There are no
// package-level flag variables.
package cli
