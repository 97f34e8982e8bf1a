//go:build tools

// Package tools pins kustomize, which Argo CD's repo-server runs to build a
// kustomize folder, so that this wrapper module's go.mod and go.sum list it:
// hack/testbin.sh builds it in the same "go build" as Argo CD.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
