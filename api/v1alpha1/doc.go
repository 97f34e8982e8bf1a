// Package v1alpha1 holds the gpufleet.io/v1alpha1 API: the DriverRollout
// kind that the lifecycle controller acts on. It holds types, markers and
// generated deepcopy, and the two contracts the rest of gpufleet shares: the
// spec's defaults (driverrollout_defaults.go, used by the CRD markers, the
// fleet parser and the planner alike) and what a rollout keeps on a node
// (node_labels.go, node_state.go). It depends on apimachinery and the core
// API only. The CRD YAML in config/crd/bases is generated from the markers
// here by hack/generate.sh.
//
// +kubebuilder:object:generate=true
// +groupName=gpufleet.io
package v1alpha1
