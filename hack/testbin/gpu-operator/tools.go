//go:build tools

// Package tools pins the NVIDIA GPU Operator so that the wrapper module's
// go.mod and go.sum list everything its build needs.
package tools

import _ "github.com/NVIDIA/gpu-operator/cmd/gpu-operator"
