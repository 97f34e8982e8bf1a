package sopstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// envTestbin is the variable that points at the testbed's folder (the
// Makefile exports it; see internal/testworld/testbed). It is spelled here rather
// than imported, since the testbed's package brings a Kubernetes test
// control plane into every test binary that imports it.
const envTestbin = "GPUFLEET_TESTBIN"

// Path returns the sops program in $GPUFLEET_TESTBIN, else in bin/testbin
// of the module root. When it is missing the test fails, naming
// "make testbin", except under -short, where it is skipped like the
// testbed's other tests.
func Path(t testing.TB) string {
	t.Helper()
	p, err := find()
	if err != nil {
		if testing.Short() {
			t.Skipf("sops: skipped under -short: %v", err)
		}
		t.Fatalf("sops: %v", err)
	}
	return p
}

// Use points gpufleet at the testbed's sops for the rest of the test, by
// setting GPUFLEET_SOPS, and returns its path. Where the variable already
// names it (the Makefile exports it, and a parallel suite sets it once for
// the process with Setenv), the environment is left as it is: a parallel
// test may not change it.
func Use(t testing.TB) string {
	t.Helper()
	p := Path(t)
	if os.Getenv("GPUFLEET_SOPS") != p {
		t.Setenv("GPUFLEET_SOPS", p)
	}
	return p
}

// Setenv points gpufleet at the testbed's sops for the whole test process,
// where it can be found: for a suite whose tests run in parallel, from its
// TestMain (a test that then finds no sops fails through Use, naming
// make testbin).
func Setenv() {
	if p, err := find(); err == nil {
		_ = os.Setenv("GPUFLEET_SOPS", p)
	}
}

func find() (string, error) {
	dir := os.Getenv(envTestbin)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		root, err := sharedtest.ModuleRoot(wd)
		if err != nil {
			return "", fmt.Errorf("%w (set %s or run `make testbin`)", err, envTestbin)
		}
		dir = filepath.Join(root, "bin", "testbin")
	}
	p, err := filepath.Abs(filepath.Join(dir, "sops"))
	if err != nil {
		return "", err
	}
	info, err := os.Stat(p)
	if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("no sops program at %s: run `make testbin` to build it (about two minutes the first time, seconds later)", p)
	}
	return p, nil
}
