//go:build tools

// Package tools pins etcd's server (whose root package is its main package)
// so that the wrapper module's go.mod and go.sum list everything its build needs.
package tools

import _ "go.etcd.io/etcd/server/v3"
