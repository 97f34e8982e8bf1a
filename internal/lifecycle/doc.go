// Package lifecycle converts a cluster's resolved node rollout policy
// (fleet.Policy) into the DriverRollout spec that render writes into the
// cluster's lifecycle/ folder. render and `gpufleet simulate` (through
// render.DriverRollout) use it; the controller does not: it reads the
// DriverRollout from the cluster, and the api/v1alpha1 types and defaults are
// the contract between the two.
package lifecycle
