// Package sharedtest finds the shared test data that lies beside the
// repository (../shared: the real operator charts and CRDs). Tests that
// need it skip, saying why, where it is absent.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Operators returns ../shared/operators relative to the directory holding
// go.mod, or skips t when it is not there.
func Operators(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("go.mod not found above the test's directory")
		}
		dir = parent
	}
	ops := filepath.Join(dir, "..", "shared", "operators")
	if _, err := os.Stat(ops); err != nil {
		t.Skipf("operator charts not found at ../shared/operators relative to the repository: %v", err)
	}
	return ops
}

// NicClusterPolicyCRD returns the NicClusterPolicy CRD of the Network
// Operator chart version (e.g. "v25.10.0") under ../shared/operators, or
// skips t when it is not there.
func NicClusterPolicyCRD(t testing.TB, version string) string {
	t.Helper()
	path := filepath.Join(Operators(t), "network-operator", version, "deployment", "network-operator", "crds", "mellanox.com_nicclusterpolicies.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the Network Operator %s's NicClusterPolicy CRD is not in ../shared/operators: %v", version, err)
	}
	return path
}
