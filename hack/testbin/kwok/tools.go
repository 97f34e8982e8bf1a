//go:build tools

// Package tools pins kwok, which plays the kubelet of the testbed's simulated
// nodes, so that the wrapper module's go.mod and go.sum list everything its
// build needs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
