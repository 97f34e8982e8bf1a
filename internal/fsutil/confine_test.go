package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestConfinement: RepositoryRoot finds the work tree's root (or keeps the
// folder outside git), ResolveWithin tells a path that really is inside a
// root from one that leaves it by .. or a link, and NoLinks refuses a path
// that leaves its root or goes through a link, up to its first missing
// part.
func TestConfinement(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	sub := filepath.Join(repo, "fleets", "site")
	outside := filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(repo, ".git"), sub, outside, filepath.Join(repo, "apps", "prod")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		filepath.Join(repo, "apps", "out"):    outside,
		filepath.Join(repo, "apps", "inside"): "prod",
		filepath.Join(sub, "leak"):            filepath.Join("..", "..", "..", "outside", "secret"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symbolic links unavailable here: %v", err)
		}
	}

	if got := RepositoryRoot(sub); got != repo {
		t.Errorf("RepositoryRoot(%s) = %s, want %s", sub, got, repo)
	}
	if got := RepositoryRoot(outside); got != outside {
		t.Errorf("RepositoryRoot outside git = %s, want the folder itself", got)
	}

	for path, inside := range map[string]bool{
		filepath.Join(repo, "apps", "inside"):  true,
		filepath.Join(sub, "..", "..", "apps"): true,
		repo:                                   true,
		filepath.Join(repo, "apps", "out"):     false,
		filepath.Join(sub, "leak"):             false,
		filepath.Join(repo, "..", "outside"):   false,
	} {
		_, err := ResolveWithin(repo, path)
		if inside && err != nil {
			t.Errorf("ResolveWithin(%s): %v, want inside", path, err)
		}
		if !inside && !errors.Is(err, ErrOutside) {
			t.Errorf("ResolveWithin(%s): %v, want ErrOutside", path, err)
		}
	}

	for rel, want := range map[string]string{
		filepath.Join("apps", "prod", "x", "y.yaml"): "",
		filepath.Join("new", "folder", "f.yaml"):     "",
		filepath.Join("apps", "inside", "f.yaml"):    "link",
		filepath.Join("apps", "out", "f.yaml"):       "link",
		filepath.Join("..", "outside", "f.yaml"):     "outside",
		filepath.Join(repo, "apps", "f.yaml"):        "outside",
	} {
		err := NoLinks(repo, rel)
		var le *LinkError
		switch {
		case want == "" && err != nil:
			t.Errorf("NoLinks(%s): %v, want nil", rel, err)
		case want == "link" && !errors.As(err, &le):
			t.Errorf("NoLinks(%s): %v, want a LinkError", rel, err)
		case want == "outside" && !errors.Is(err, ErrOutside):
			t.Errorf("NoLinks(%s): %v, want ErrOutside", rel, err)
		}
	}
}
