package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpufleet/gpufleet/internal/fsutil"
)

// Change is one file that a render adds, changes or removes.
type Change struct {
	Path string `json:"path"`
	// Action is "add", "change" or "remove".
	Action string `json:"action"`
}

// Changes actions.
const (
	ActionAdd    = "add"
	ActionChange = "change"
	ActionRemove = "remove"
)

// Diff compares out with what is in dir: files to add or change, and files
// an earlier render wrote (they start with Header) that out no longer has.
// A file in the way that render did not write is an error: render never
// overwrites what a person wrote.
func Diff(out *Output, dir string) ([]Change, error) {
	existing, err := generatedFiles(dir)
	if err != nil {
		return nil, err
	}
	var changes []Change
	var foreign []error
	for _, p := range out.Paths() {
		old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, Change{Path: p, Action: ActionAdd})
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", p, err)
		case !bytes.HasPrefix(old, []byte(Header)):
			foreign = append(foreign, fmt.Errorf("%s exists and was not written by gpufleet render: move it away, or delete it", p))
		case !bytes.Equal(old, out.Files[p]):
			changes = append(changes, Change{Path: p, Action: ActionChange})
		}
	}
	for _, p := range existing {
		if _, ok := out.Files[p]; !ok {
			changes = append(changes, Change{Path: p, Action: ActionRemove})
		}
	}
	if len(foreign) > 0 {
		return nil, errors.Join(foreign...)
	}
	slices.SortFunc(changes, func(a, b Change) int { return compareStrings(a.Path, b.Path) })
	return changes, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// generatedFiles lists the files under dir that an earlier render wrote.
// Only the folders render writes are searched.
func generatedFiles(dir string) ([]string, error) {
	var paths []string
	if ours, err := hasHeader(filepath.Join(dir, ".sops.yaml")); err == nil && ours {
		paths = append(paths, ".sops.yaml")
	}
	for _, top := range []string{"clusters", "apps", "infrastructure"} {
		root := filepath.Join(dir, top)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipDir
			}
			if err != nil {
				return err
			}
			if d.IsDir() || filepath.Ext(p) != ".yaml" {
				return nil
			}
			ours, err := hasHeader(p)
			if err != nil {
				return err
			}
			if ours {
				rel, _ := filepath.Rel(dir, p)
				paths = append(paths, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", root, err)
		}
	}
	return paths, nil
}

func hasHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, len(Header))
	n, _ := f.Read(buf)
	return bytes.Equal(buf[:n], []byte(Header)), nil
}

// Write makes dir hold exactly out's files among those render writes. It
// changes nothing when a file is in the way (see Diff); when writing fails
// half-way it puts back every file it had already replaced or removed, so
// the previous output stays whole.
func Write(out *Output, dir string) ([]Change, error) {
	changes, err := Diff(out, dir)
	if err != nil {
		return nil, err
	}
	var undo []func()
	rollback := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	for _, c := range changes {
		target := filepath.Join(dir, filepath.FromSlash(c.Path))
		old, readErr := os.ReadFile(target)
		had := readErr == nil
		var err error
		if c.Action == ActionRemove {
			err = os.Remove(target)
		} else {
			err = writeFileAtomic(target, out.Files[c.Path])
		}
		if err != nil {
			rollback()
			return nil, fmt.Errorf("write %s: %w (nothing was changed)", c.Path, err)
		}
		undo = append(undo, func() {
			if had {
				_ = fsutil.WriteFileAtomic(target, old)
			} else {
				_ = os.Remove(target)
			}
		})
	}
	removeEmptyDirs(dir, changes)
	return changes, nil
}

// writeFileAtomic writes one file; tests replace it to inject a failure.
var writeFileAtomic = fsutil.WriteFileAtomic

// removeEmptyDirs removes the folders that removals left empty.
func removeEmptyDirs(dir string, changes []Change) {
	for _, c := range changes {
		if c.Action != ActionRemove {
			continue
		}
		for d := filepath.Dir(filepath.Join(dir, filepath.FromSlash(c.Path))); d != dir && len(d) > len(dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
}
