package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to a temporary file beside path and renames it
// into place, so a reader never sees half a file and an interrupted write
// leaves the old content. Folders are created as needed; the file is 0644.
func WriteFileAtomic(path string, data []byte) error {
	return writeAtomic(path, data, os.Rename)
}

// ErrExist is returned by WriteNewFileAtomic when path exists.
var ErrExist = fs.ErrExist

// WriteNewFileAtomic is WriteFileAtomic for a file that must not exist: the
// whole file is linked into place, which fails (errors.Is ErrExist) when a
// file of that name exists, even one created since the caller looked.
func WriteNewFileAtomic(path string, data []byte) error {
	return writeAtomic(path, data, os.Link)
}

// writeAtomic writes data to a temporary file beside path and puts it there
// with place (rename, or link for a new file only).
func writeAtomic(path string, data []byte, place func(oldpath, newpath string) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gpufleet-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return place(tmp.Name(), path)
}
