// Package admission writes gpufleet-controller's admission policies, the
// ValidatingAdmissionPolicies of config/admission that the API server
// evaluates itself (CEL, no webhook to run), from the contract they
// enforce: the node labels only the controller writes
// (v1alpha1.ControllerNodeLabels) and the service account it runs as
// (config). config/admission holds what Policies returns, so that
// `kubectl apply -k config/default` and `gpufleet render` install it; a
// test keeps the two equal (-update rewrites the files).
package admission
