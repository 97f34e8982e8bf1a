// Package fleettest writes synthetic fleet files for benchmarks and tests:
// any number of clusters in the example fleet's format, with its releases,
// policy and serving stack. It is test support: the binaries never import it.
package fleettest
