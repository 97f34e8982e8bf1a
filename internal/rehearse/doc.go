// Package rehearse is the library behind `gpufleet simulate`: it rehearses
// a cluster's driver rollout, the very DriverRollout render writes for it
// (render.DriverRollout), on a simulated cluster (package sim), and says
// how it went. It parses no flags and prints nothing; the command maps its
// Options from flags and prints its Rehearsals.
package rehearse
