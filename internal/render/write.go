package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
// overwrites what a person wrote. So is a render that switches a cluster's
// GPU Operator from ClusterPolicy to NVIDIADriver driver management in a
// way that deletes every driver pod at once (a *SwitchError; see
// checkSwitches): Write refuses it, and Diff says so as well.
func Diff(out *Output, dir string) ([]Change, error) {
	changes, _, err := diff(out, dir, true)
	return changes, err
}

// diff is Diff, and the content of each file to change as it was. Each
// file is read once: the files render may have written are found by
// walking its folders, and those out holds are compared as they are read.
// guard judges the switches of driver management (checkSwitches).
func diff(out *Output, dir string, guard bool) ([]Change, map[string][]byte, error) {
	if err := checkPaths(out, dir); err != nil {
		return nil, nil, err
	}
	existing, err := generatedFiles(dir, out)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	var foreign []error
	old := map[string][]byte{}
	for _, p := range out.Paths() {
		f, seen := existing.files[p]
		if !seen {
			// Not under the folders walked (or not a .yaml file): read it.
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				f = existingFile{}
			case err != nil:
				return nil, nil, fmt.Errorf("read %s: %w", p, err)
			default:
				f = existingFile{exists: true, ours: bytes.HasPrefix(b, []byte(Header)), data: b}
			}
		}
		switch {
		case f.err != nil:
			return nil, nil, fmt.Errorf("read %s: %w", p, f.err)
		case !f.exists:
			changes = append(changes, Change{Path: p, Action: ActionAdd})
		case !f.ours:
			foreign = append(foreign, fmt.Errorf("%s exists and was not written by gpufleet render: move it away, or delete it", p))
		case !bytes.Equal(f.data, out.Files[p]):
			changes = append(changes, Change{Path: p, Action: ActionChange})
			old[p] = f.data
		}
	}
	for _, p := range existing.ours {
		if _, ok := out.Files[p]; !ok {
			changes = append(changes, Change{Path: p, Action: ActionRemove})
		}
	}
	if len(foreign) > 0 {
		return nil, nil, errors.Join(foreign...)
	}
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	if guard {
		if err := checkSwitches(out, dir, changes); err != nil {
			return nil, nil, err
		}
	}
	return changes, old, nil
}

// existingFile is one file found in the output folder.
type existingFile struct {
	exists, ours bool
	// data is the whole file when out has it, to compare.
	data []byte
	err  error
}

// existingFiles are the files under the folders render writes.
type existingFiles struct {
	// ours lists the files an earlier render wrote, in walk order.
	ours []string
	// files are those of out's paths the walk found.
	files map[string]existingFile
}

// generatedFiles lists the files under dir that an earlier render wrote,
// and reads those that out has. Only the folders render writes are
// searched. The files are read on every core: an output folder of 5,000
// clusters holds 150,000 of them.
func generatedFiles(dir string, out *Output) (existingFiles, error) {
	found := existingFiles{files: map[string]existingFile{}}
	// Not through a link (a person's own .sops.yaml may be one: then it is
	// not render's; checkPaths refuses it where render would write it).
	if fi, err := os.Lstat(filepath.Join(dir, sopsConfigFile)); err == nil && fi.Mode().IsRegular() {
		if ours, err := hasHeader(filepath.Join(dir, sopsConfigFile)); err == nil && ours {
			found.ours = append(found.ours, sopsConfigFile)
		}
	}
	var paths []string // slash-separated, relative to dir, in walk order
	for _, top := range ownedFolders {
		root := filepath.Join(dir, top)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipDir
			}
			if err != nil {
				return err
			}
			// The walk sees every entry of the folders render owns, links
			// included (it does not follow them): a link there, committed
			// by hand, would have render read or write outside them.
			if err := ownedEntry(p, d.Type()); err != nil {
				return err
			}
			if d.IsDir() || filepath.Ext(p) != ".yaml" {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			paths = append(paths, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return existingFiles{}, fmt.Errorf("scan %s: %w", root, err)
		}
	}
	files := make([]existingFile, len(paths))
	errs := make([]error, len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(2*runtime.GOMAXPROCS(0), len(paths)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(paths); i = int(next.Add(1)) - 1 {
				p := filepath.Join(dir, filepath.FromSlash(paths[i]))
				if _, want := out.Files[paths[i]]; want {
					// Read it whole once: Diff compares it next.
					b, err := os.ReadFile(p)
					files[i] = existingFile{exists: err == nil, ours: bytes.HasPrefix(b, []byte(Header)), data: b, err: err}
					continue
				}
				ours, err := hasHeader(p)
				files[i], errs[i] = existingFile{exists: true, ours: ours}, err
			}
		})
	}
	wg.Wait()
	for i, rel := range paths {
		if errs[i] != nil {
			return existingFiles{}, fmt.Errorf("scan %s: %w", rel, errs[i])
		}
		if _, want := out.Files[rel]; want {
			found.files[rel] = files[i]
		}
		if f := files[i]; f.err == nil && f.ours {
			found.ours = append(found.ours, rel)
		}
	}
	return found, nil
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

// ownedFolders are the folders of the output render owns: it writes
// there, and removes there the files an earlier render wrote. Beside them
// it writes .sops.yaml alone (sopsConfigFile).
var ownedFolders = []string{"clusters", "apps", "infrastructure"}

const sopsConfigFile = ".sops.yaml"

// ownedEntry refuses what render must not meet in its folders: a symbolic
// link (render would read, and write, where it points) and anything but a
// folder or a plain file (a pipe would block the read).
func ownedEntry(p string, mode fs.FileMode) error {
	switch {
	case mode&fs.ModeSymlink != 0:
		return &fsutil.LinkError{Path: p}
	case mode.Type() != 0 && !mode.IsDir():
		return fmt.Errorf("%s is not a file or folder (%v): render reads and writes plain files only", p, mode.Type())
	}
	return nil
}

// safeSegment says whether part is one part of a path render writes: a
// name the fleet file checked (a DNS label, a chart version) within a
// fixed pattern: letters, digits, '.', '_', '+' and '-', starting with a
// letter or digit (so never "." or ".."). Byte by byte rather than a
// regular expression: a large fleet's render checks a million of them.
func safeSegment(part string) bool {
	if part == "" || !isAlnum(part[0]) {
		return false
	}
	for i := 1; i < len(part); i++ {
		if c := part[i]; !isAlnum(c) && c != '.' && c != '_' && c != '+' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checkPaths refuses an output that would write outside the folders render
// owns: each path is relative, clean, made of plain names, under one of
// ownedFolders or .sops.yaml. The fleet file's checks already keep every
// name a plain DNS label (fleet's validate); this is the second lock, at
// the door. .sops.yaml, outside the walked folders, must not be a link.
func checkPaths(out *Output, dir string) error {
	var bad []error
	for p := range out.Files {
		if err := checkPath(p); err != nil {
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		slices.SortFunc(bad, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return errors.Join(bad...)
	}
	if _, ok := out.Files[sopsConfigFile]; ok {
		if err := fsutil.NoLinks(dir, sopsConfigFile); err != nil {
			return err
		}
	}
	return nil
}

// checkPath checks one output path (see checkPaths).
func checkPath(p string) error {
	if p == sopsConfigFile {
		return nil
	}
	top, rest, nested := strings.Cut(p, "/")
	ok := nested && slices.Contains(ownedFolders, top)
	for part := range strings.SplitSeq(rest, "/") {
		ok = ok && safeSegment(part)
	}
	if !ok {
		return fmt.Errorf("render would write %q, which is not a plain path in the folders it owns (%s, %s): refused", p, strings.Join(ownedFolders, ", "), sopsConfigFile)
	}
	return nil
}

// Write makes dir hold exactly out's files among those render writes. It
// changes nothing when a file is in the way or the render switches a
// cluster's driver management unsafely (see Diff); when writing fails
// half-way it puts back every file it had already replaced or removed, so
// the previous output stays whole.
func Write(out *Output, dir string) ([]Change, error) {
	return WriteWith(out, dir, WriteOptions{})
}

// WriteOptions tune WriteWith.
type WriteOptions struct {
	// Restore puts back an output that was in dir a moment ago (a command
	// undoing its own write after a later step failed): the driver
	// management guard, which judges a render against the tree it
	// replaces, does not apply to going back to what was there.
	Restore bool
}

// WriteWith is Write with opts.
func WriteWith(out *Output, dir string, opts WriteOptions) ([]Change, error) {
	changes, before, err := diff(out, dir, !opts.Restore)
	if err != nil {
		return nil, err
	}
	var undo []func()
	rollback := func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}
	for _, c := range changes {
		target := filepath.Join(dir, filepath.FromSlash(c.Path))
		// What to put back: Diff read each file it changes, a file to add
		// is not there, and a file to remove is read now.
		old, had := before[c.Path]
		if c.Action == ActionRemove {
			var readErr error
			old, readErr = os.ReadFile(target)
			had = readErr == nil
		}
		var err error
		if c.Action == ActionRemove {
			err = os.Remove(target)
		} else {
			err = writeFileAtomic(target, out.Files[c.Path])
		}
		if err != nil {
			rollback()
			// Folders made for new files go too.
			for _, c := range changes {
				pruneEmptyParents(dir, c.Path)
			}
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
var writeFileAtomic = createOrReplace

// createOrReplace replaces a file atomically (fsutil.WriteFileAtomic), but
// creates a new one in place: a temporary file and a rename cost twice the
// directory updates, and most of an empty folder's render time. A new file
// left half-written by a failure is removed with the rest (see Write).
func createOrReplace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if errors.Is(err, fs.ErrExist) {
		return fsutil.WriteFileAtomic(path, data)
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	// 0644 whatever the umask, as fsutil.WriteFileAtomic writes.
	cerr := f.Chmod(0o644)
	if err := f.Close(); err != nil && werr == nil && cerr == nil {
		werr = err
	}
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
	}
	return werr
}

// removeEmptyDirs removes the folders that removals left empty.
func removeEmptyDirs(dir string, changes []Change) {
	for _, c := range changes {
		if c.Action == ActionRemove {
			pruneEmptyParents(dir, c.Path)
		}
	}
}

// pruneEmptyParents removes the folders above rel, up to dir, that are
// empty.
func pruneEmptyParents(dir, rel string) {
	for d := filepath.Dir(filepath.Join(dir, filepath.FromSlash(rel))); d != dir && len(d) > len(dir); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
}
