// Package v1alpha1 holds the gpufleet.io/v1alpha1 API: the DriverRollout
// kind that the lifecycle controller acts on. It holds types, markers and
// generated deepcopy, and the two contracts the rest of gpufleet shares: the
// spec's defaults (driverrollout_defaults.go, used by the CRD markers, the
// fleet parser and the planner alike) and what a rollout keeps on a node
// (node_labels.go, node_state.go). It also keeps, as constants, every
// other label, annotation and kind that more than one package of gpufleet
// names: the GPU Feature Discovery and GPU Operator node labels gpufleet
// reads (node_labels.go, actuator.go), the operator's kinds and driver pod
// label (gpu_operator.go) and the labels and annotations gpufleet owns or
// reads on other objects (object_labels.go). It depends on apimachinery
// and the core API only. The CRD YAML in config/crd/bases is generated
// from the markers here by hack/generate.sh.
//
// +kubebuilder:object:generate=true
// +groupName=gpufleet.io
package v1alpha1
