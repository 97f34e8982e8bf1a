package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fsutil"
)

func TestWriteRemovesStaleKeepsForeign(t *testing.T) {
	dir := t.TempDir()
	out := renderFile(t, exampleFleet)
	if _, err := Write(out, dir); err != nil {
		t.Fatal(err)
	}
	// A file an earlier render wrote that this one does not, and a file a
	// person put there.
	stale := filepath.Join(dir, "clusters", "old-cluster", "config", "nvidiadriver-x.yaml")
	foreign := filepath.Join(dir, "clusters", "stg-h100", "notes.yaml")
	writeFile(t, stale, Header+"kind: NVIDIADriver\n")
	writeFile(t, foreign, "# mine\n")

	changes, err := Diff(out, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Change{{Path: "clusters/old-cluster/config/nvidiadriver-x.yaml", Action: ActionRemove}}, changes); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	if _, err := Write(out, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale generated file still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusters", "old-cluster")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder the stale file left empty is still there")
	}
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "# mine\n" {
		t.Errorf("a file render did not write was touched: %q, %v", b, err)
	}
	if changes, err := Diff(out, dir); err != nil || len(changes) != 0 {
		t.Errorf("after Write the output must be up to date, got %v, %v", changes, err)
	}
}

func TestWriteRefusesToOverwriteForeignFile(t *testing.T) {
	dir := t.TempDir()
	out := renderFile(t, exampleFleet)
	mine := filepath.Join(dir, "clusters", "stg-h100", "flux-config.yaml")
	writeFile(t, mine, "# hand-written\n")
	_, err := Write(out, dir)
	if err == nil || !strings.Contains(err.Error(), "clusters/stg-h100/flux-config.yaml exists and was not written by gpufleet render") {
		t.Fatalf("want a refusal naming the file, got %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "clusters"))
	if len(entries) != 1 {
		t.Errorf("a refused render must write nothing, found %d cluster folders", len(entries))
	}
}

// TestWriteFailureLeavesPreviousOutput makes the tenth file write fail and
// checks that every file is as it was before.
func TestWriteFailureLeavesPreviousOutput(t *testing.T) {
	dir := t.TempDir()
	first := renderFile(t, exampleFleet)
	if _, err := Write(first, dir); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, dir)
	second := withRollout(t, `rollout = { release = "r2026-10", wave = "prod-ampere" }`)

	calls := 0
	writeFileAtomic = func(path string, data []byte) error {
		if calls++; calls == 10 {
			return errors.New("disk full")
		}
		return fsutil.WriteFileAtomic(path, data)
	}
	defer func() { writeFileAtomic = fsutil.WriteFileAtomic }()
	if _, err := Write(second, dir); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want the injected failure, got %v", err)
	}
	if calls < 10 {
		t.Fatalf("the failure was never injected (%d writes)", calls)
	}
	if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
		t.Errorf("a failed render changed the previous output (-before +after):\n%s", diff)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
