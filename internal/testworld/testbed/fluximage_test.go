package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartFluxImageMissingNamesMakeTestbin: a folder with the core programs
// but without the image automation ones must fail naming them and
// "make testbin", before anything starts.
func TestStartFluxImageMissingNamesMakeTestbin(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{binEtcd, binKubeAPIServer, binSourceController, binKustomizeController} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "crds", "flux"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", "flux", "x.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvTestbin, dir)
	_, err := Start(t.Context(), Options{Flux: true, FluxImage: true, Notification: true})
	if !errors.Is(err, ErrMissingBinaries) {
		t.Fatalf("Start() error = %v, want ErrMissingBinaries", err)
	}
	for _, want := range []string{"make testbin", binImageReflector, binImageAutomation, binNotification} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestStartFluxImageNeedsFlux(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{binEtcd, binKubeAPIServer} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvTestbin, dir)
	if _, err := Start(t.Context(), Options{Notification: true}); !errors.Is(err, errNeedsFlux) {
		t.Fatalf("Start() error = %v, want errNeedsFlux", err)
	}
}
