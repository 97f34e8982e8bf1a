package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A fleet repository is input, not a friend: a pull request decides every
// file in it, symbolic links included. The helpers here keep what gpufleet
// reads and writes for a repository inside it.

// ErrOutside is wrapped by the errors of a path that leaves the folder it
// must stay in, by `..` or through a symbolic link.
var ErrOutside = errors.New("outside the folder it must stay in")

// RepositoryRoot is the root of the git work tree holding dir: the closest
// folder at or above dir with a .git entry (a folder, or the file of a
// worktree or submodule). Without one it is dir itself, so that a fleet
// file outside git is confined to its own folder.
func RepositoryRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return abs
		}
	}
}

// Within reports whether path is root or below it. Both are taken as they
// are (resolve symbolic links first where that matters).
func Within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// ResolveWithin resolves every symbolic link of path, which must exist, and
// returns where it really is; an error wrapping ErrOutside when that is not
// inside root (itself resolved).
func ResolveWithin(root, path string) (string, error) {
	resolvedRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	resolvedRoot, err = filepath.Abs(resolvedRoot)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	resolved, err = filepath.Abs(resolved)
	if err != nil {
		return "", err
	}
	if !Within(resolvedRoot, resolved) {
		return "", fmt.Errorf("%s leaves %s (through a symbolic link or ..): %w", path, root, ErrOutside)
	}
	return resolved, nil
}

// LinkError is a path that goes through a symbolic link where gpufleet
// neither reads nor writes through one.
type LinkError struct {
	// Path is the link, as given (root joined with the part of rel up to
	// and including the link).
	Path string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link: gpufleet does not read or write through links in the folders it owns; replace it with a folder or file", e.Path)
}

// NoLinks checks rel, a path relative to root, before gpufleet writes (or
// reads) root/rel: rel is local (no absolute path, no `..` leaving root)
// and no part of it that exists is a symbolic link, so the write lands
// where it says, inside root. root itself is the caller's and may be a
// link. A missing part ends the check: nothing below it exists.
func NoLinks(root, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("%s is not a path inside %s: %w", rel, root, ErrOutside)
	}
	p := root
	for part := range strings.SplitSeq(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &LinkError{Path: p}
		}
	}
	return nil
}
