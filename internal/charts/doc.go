// Package charts finds, loads and renders the operator Helm charts (GPU
// Operator, Network Operator) at a given version, offline where it can, with
// Helm's Go SDK.
//
// A Source finds a chart by name and version in a Helm repository (index and
// archives cached on disk), an OCI registry, a single .tgz archive, or a
// folder of unpacked charts laid out as <chart>/<version>/ (the chart may sit
// a level or two deeper, as in a checkout of the operator's git repository).
// Render turns a chart and values into sorted objects the way `helm template`
// would, for a given Kubernetes version; CRDs returns the CRDs the chart ships
// in its crds/ folders and those of its subcharts.
package charts
