//go:build tools

// Package tools pins kube-apiserver so that the wrapper module's go.mod and
// go.sum list everything its build needs.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
