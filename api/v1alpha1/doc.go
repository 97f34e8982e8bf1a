// Package v1alpha1 holds the gpufleet.io/v1alpha1 API: the DriverRollout
// kind that the lifecycle controller acts on. It holds types, markers and
// generated deepcopy only; the CRD YAML in config/crd/bases is generated
// from the markers here by hack/generate.sh.
//
// +kubebuilder:object:generate=true
// +groupName=gpufleet.io
package v1alpha1
