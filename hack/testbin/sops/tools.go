//go:build tools

// Package tools pins sops, which "gpufleet secret" runs in the tests, so that
// the wrapper module's go.mod and go.sum list everything its build needs.
package tools

import _ "github.com/getsops/sops/v3/cmd/sops"
