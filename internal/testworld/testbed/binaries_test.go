package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinariesMissingNamesMakeTestbin(t *testing.T) {
	t.Setenv(EnvTestbin, t.TempDir())
	_, err := FindBinaries()
	if !errors.Is(err, ErrMissingBinaries) {
		t.Fatalf("FindBinaries() error = %v, want ErrMissingBinaries", err)
	}
	for _, want := range []string{"make testbin", "etcd", "kube-apiserver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFindBinariesFromEnv(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{binEtcd, binKubeAPIServer} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvTestbin, dir)
	b, err := FindBinaries()
	if err != nil {
		t.Fatalf("FindBinaries() error = %v", err)
	}
	if b.Dir != dir {
		t.Errorf("Dir = %q, want %q", b.Dir, dir)
	}
	if err := b.CheckFlux(); !errors.Is(err, ErrMissingBinaries) {
		t.Errorf("CheckFlux() error = %v, want ErrMissingBinaries", err)
	}
}
