// Package dashboard is the live, read-only web view of the fleet that
// `gpufleet dashboard` serves: the waves in order, each cluster with the
// release the fleet file gives it, what the promotion waits for and the
// exact next command (promote's own status), and per cluster, live, the
// gate's checks, the Flux objects' readiness and the DriverRollout's nodes
// as a timeline of phases, with the failure budget and the maintenance
// window (the planner's calendar).
//
// Cost does not grow with the number of browsers. Each cluster has one
// set of informers (a controller-runtime cache: one list and one watch per
// kind), shared by every browser; a change marks the cluster dirty and its
// view is rebuilt at most once per TTL, from the cache, by the gate's own
// Observe and Evaluate, so the page judges a cluster exactly as `gpufleet
// gate` would. Each rebuilt view is rendered to HTML once, and every
// browser's Server-Sent Events stream sends the fragments that changed
// since it last looked. Node heartbeats, which change nothing the page
// shows, mark nothing dirty.
//
// A cluster that cannot be reached is shown as unreachable with the error,
// never with the last view it had as if it were current: a readiness probe
// (GET /readyz every ProbeInterval) decides, and any request of the
// cluster's informers that fails, or a watch error, runs it at once. A
// cluster that answers while a watch failed lately is shown with a warning
// that what it shows may be stale.
//
// It answers only the Host names it is known by (loopback, the listen
// address's, Options.AllowedHosts) and 421 to any other, so that a page of
// another origin cannot read it through DNS rebinding (hostcheck.go).
//
// It writes nothing: no cluster object, no git commit, no file. It reads
// the fleet file and the repository's HEAD again when they change, so a
// promotion committed beside it shows within seconds.
package dashboard
