package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteNewFileAtomic: a new file is written whole, in a folder made for
// it; an existing one is left as it is and reported with ErrExist; no
// temporary file is left behind either way. WriteFileAtomic replaces.
func TestWriteNewFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "fleet.toml")
	if err := WriteNewFileAtomic(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNewFileAtomic(path, []byte("two")); !errors.Is(err, ErrExist) {
		t.Errorf("second write: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("file holds %q, want the first write", b)
	}
	if err := WriteFileAtomic(path, []byte("three")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Errorf("file holds %q after WriteFileAtomic", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want the file alone", len(entries))
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
}
