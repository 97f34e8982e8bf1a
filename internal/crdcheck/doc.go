// Package crdcheck validates custom resources against CustomResourceDefinitions
// the way the Kubernetes API server does on create, without a cluster: it
// builds the structural schema of every served CRD version, applies defaults,
// drops nulls on non-nullable fields, prunes (and reports) unknown fields, and
// then checks types, required fields, enums, patterns, list invariants and the
// CEL x-kubernetes-validations rules that can run without an old object.
//
// It also flattens CRD schemas to one line per field path, which both the
// crd-diff command and the "exists in version X" hint are built on.
package crdcheck
