//go:build tools

// Package tools pins the control-plane programs the testbed runs
// (kube-apiserver, kube-controller-manager, kube-scheduler) so that the
// wrapper module's go.mod and go.sum list everything their builds need. The
// three are built by one "go build" so they share their compiled packages.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
