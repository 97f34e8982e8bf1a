// Package imageautomation proves, against real Flux controllers, that the
// serving stack gpufleet render writes for the example fleet really works:
// image-reflector-controller picks the right tags, image-automation-controller
// pushes exactly the marked lines to the review branch, the push Receiver
// makes Flux fetch at once, and the failure Alert reaches its endpoint.
//
// The tests need the programs "make testbin" builds; they skip under -short.
package imageautomation
