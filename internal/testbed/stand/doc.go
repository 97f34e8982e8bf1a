// Package stand holds stand-ins for controllers the testbed does not run,
// for the lab (gpufleet-lab demo) and the end-to-end suite (test/e2e).
//
// Each stand-in is a goroutine that sets an object's status as the real
// controller would, and says so in the condition's message
// ("simulated …"), so nothing it marks can be mistaken for the real thing.
// They exist because the real controller cannot run on the testbed, not to
// skip work it could do: today only notification-controller's Receiver,
// which the serving stack applies and the infra-webhook Kustomization
// (wait: true) waits for. This is test support: no production binary may
// import it (go list -deps ./cmd/gpufleet ./cmd/gpufleet-controller shows
// it absent).
package stand
