// Package config holds gpufleet-controller's install manifests: the
// DriverRollout CRD (generated from api/), the controller's least-privilege
// RBAC (generated from its +kubebuilder:rbac markers), its Deployment and
// the admission policy that keeps one owner per node.
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
//go:embed manager/manager.yaml manager/service.yaml admission/node_ownership.yaml
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
}

// AdmissionPolicy is the file of the ValidatingAdmissionPolicy and its
// binding (admissionregistration.k8s.io/v1: Kubernetes 1.30 and later).
const AdmissionPolicy = "admission/node_ownership.yaml"

// Namespace and Deployment name the controller as its manifests install it.
const (
	Namespace  = "gpufleet-system"
	Deployment = "gpufleet-controller"
	// Container is the Deployment's container that runs the controller.
	Container = "manager"
)
