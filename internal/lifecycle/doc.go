// Package lifecycle holds what the lifecycle controller and render share: the
// conversion from a cluster's resolved node rollout policy (fleet.Policy) to
// the DriverRollout object that render writes into the cluster's lifecycle/
// folder.
package lifecycle
