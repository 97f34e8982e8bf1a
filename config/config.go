// Package config holds gpufleet-controller's install manifests: the
// DriverRollout CRD (generated from api/), the controller's least-privilege
// RBAC (generated from its +kubebuilder:rbac markers), its Deployment and
// the admission policies that keep its node labels and DriverRollout status
// to it.
//
// They are YAML, applied by hand with `kubectl apply -k config/default`, and
// embedded here so that `gpufleet render` writes the very same objects into
// each cluster's folder (at the release's controller version and image):
// one source, so a rendered install never lags behind the generated CRD or
// RBAC.
package config

import "embed"

// Install are the manifests, by path under config/ (e.g.
// "manager/manager.yaml"), in the order Files lists them.
//
//go:embed crd/bases/gpufleet.io_driverrollouts.yaml
//go:embed manager/namespace.yaml rbac/service_account.yaml rbac/role.yaml rbac/role_binding.yaml
//go:embed manager/manager.yaml manager/service.yaml admission/node_ownership.yaml admission/rollout_status.yaml
var Install embed.FS

// Files are the manifests of Install in the order an install applies them:
// the CRD and the namespace before what lives in them.
var Files = []string{
	"crd/bases/gpufleet.io_driverrollouts.yaml",
	"manager/namespace.yaml",
	"rbac/service_account.yaml",
	"rbac/role.yaml",
	"rbac/role_binding.yaml",
	"manager/manager.yaml",
	"manager/service.yaml",
	AdmissionPolicy,
	StatusAdmissionPolicy,
}

// AdmissionPolicy and StatusAdmissionPolicy are the files of the
// ValidatingAdmissionPolicies and their bindings
// (admissionregistration.k8s.io/v1: Kubernetes 1.30 and later), the one on
// Nodes and the one on DriverRollout status; internal/admission writes
// them.
const (
	AdmissionPolicy       = "admission/node_ownership.yaml"
	StatusAdmissionPolicy = "admission/rollout_status.yaml"
)

// AdmissionPolicies are the files of the admission policies, which a
// cluster before Kubernetes 1.30 does not serve.
var AdmissionPolicies = []string{AdmissionPolicy, StatusAdmissionPolicy}

// Namespace and Deployment name the controller as its manifests install it.
const (
	Namespace  = "gpufleet-system"
	Deployment = "gpufleet-controller"
	// Container is the Deployment's container that runs the controller.
	Container = "manager"
	// ServiceAccount is the service account the controller runs as: the
	// one identity the admission policies let write its node labels and
	// DriverRollout status.
	ServiceAccount = "gpufleet-controller"
)
