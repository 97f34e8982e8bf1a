package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

	var calls atomic.Int64
	writeFileAtomic = func(path string, data []byte) error {
		if calls.Add(1) == 10 {
			return errors.New("disk full")
		}
		return fsutil.WriteFileAtomic(path, data)
	}
	defer func() { writeFileAtomic = createOrReplace }()
	if _, err := Write(second, dir); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want the injected failure, got %v", err)
	}
	if n := calls.Load(); n < 10 {
		t.Fatalf("the failure was never injected (%d writes)", n)
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

// TestWriteFailureIntoAnEmptyFolderLeavesNothing: when a write into an
// empty folder fails, every file already written is removed, and the
// folders made for them too, whichever write failed.
func TestWriteFailureIntoAnEmptyFolderLeavesNothing(t *testing.T) {
	out := renderFile(t, exampleFleet)
	for _, failAt := range []int64{1, 7, int64(len(out.Files))} {
		dir := t.TempDir()
		var calls atomic.Int64
		writeFileAtomic = func(path string, data []byte) error {
			if calls.Add(1) == failAt {
				return errors.New("disk full")
			}
			return createOrReplace(path, data)
		}
		_, err := Write(out, dir)
		writeFileAtomic = createOrReplace
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("failure at write %d: %v, want the injected failure", failAt, err)
		}
		if left := readTree(t, dir); len(left) != 0 {
			t.Errorf("failure at write %d: %d files left", failAt, len(left))
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("failure at write %d: %d entries left in the folder (empty folders kept)", failAt, len(entries))
		}
	}
}
