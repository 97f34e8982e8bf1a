// Package sharedtest finds the repository's root (ModuleRoot) and the
// shared test data that lies beside it (../shared: the real operator charts
// and CRDs). Tests that need the data skip, saying why, where it is absent.
package sharedtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot walks up from dir to the first folder that holds a go.mod:
// the repository's root, for a test run anywhere in it.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = parent
	}
}

// Operators returns ../shared/operators relative to the directory holding
// go.mod, or skips t when it is not there.
func Operators(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := ModuleRoot(wd)
	if err != nil {
		t.Skip(err)
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
