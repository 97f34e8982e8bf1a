// Package charts finds, loads, renders and checks the operator Helm charts
// (GPU Operator, Network Operator) at a given version, offline where it can,
// with Helm's Go SDK.
//
// A Source finds a chart by name and version in a Helm repository (index and
// archives cached on disk), an OCI registry, a single .tgz archive, or a
// folder of unpacked charts laid out as <chart>/<version>/ (the chart may sit
// a level or two deeper, as in a checkout of the operator's git repository;
// symbolic links are followed to find a chart, never out of the chart's own
// folder, and never out of the fleet repository for a folder it holds: see
// confine.go). Render turns a chart and values into sorted
// objects the way `helm template` would, for a given Kubernetes version;
// ManifestObjects and Renderer give the manifests chart mode its plain,
// server-side-apply-clean objects; CRDs returns the CRDs the chart ships.
// The Checker (check.go, what `gpufleet validate` runs) renders every
// release's charts and validates their objects and gpufleet's own against
// that version's CRD schemas; DiffCRDs compares two versions' schemas.
package charts
