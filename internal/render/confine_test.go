package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
)

// TestWriteRefusesLinks: a symbolic link committed in the folders render
// owns (a cluster's folder, a whole top folder, a file, .sops.yaml) is
// refused before anything is read or written through it, and the place
// it points to is left untouched; so is a pipe, whose read would block.
func TestWriteRefusesLinks(t *testing.T) {
	out := renderFile(t, exampleFleet)
	for _, tc := range []struct {
		name string
		// plant makes the hostile entry at dir, pointing into elsewhere.
		plant func(t *testing.T, dir, elsewhere string) string
	}{
		{"cluster folder", func(t *testing.T, dir, elsewhere string) string {
			link := filepath.Join(dir, "clusters", "stg-h100")
			mkdirAll(t, filepath.Dir(link))
			symlink(t, elsewhere, link)
			return link
		}},
		{"top folder", func(t *testing.T, dir, elsewhere string) string {
			link := filepath.Join(dir, "clusters")
			symlink(t, elsewhere, link)
			return link
		}},
		{"rendered file", func(t *testing.T, dir, elsewhere string) string {
			if _, err := Write(out, dir); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "clusters", "stg-h100", "kustomization.yaml")
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(elsewhere, "secret.yaml"), Header+"kind: Secret\n")
			symlink(t, filepath.Join(elsewhere, "secret.yaml"), link)
			return link
		}},
		{"pipe", func(t *testing.T, dir, elsewhere string) string {
			p := filepath.Join(dir, "clusters", "stg-h100", "config", "x.yaml")
			mkdirAll(t, filepath.Dir(p))
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("no named pipes here: %v", err)
			}
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			bad := tc.plant(t, dir, elsewhere)
			before := listTree(t, elsewhere)
			_, err := Write(out, dir)
			if err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("Write: %v; want a refusal naming %s", err, bad)
			}
			if tc.name != "pipe" {
				if _, ok := errors.AsType[*fsutil.LinkError](err); !ok {
					t.Errorf("Write: %v; want a *fsutil.LinkError", err)
				}
			}
			if _, err := Diff(out, dir); err == nil {
				t.Error("Diff (render --check, verify) reads through it too")
			}
			if after := listTree(t, elsewhere); after != before {
				t.Errorf("the folder the link points to changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}

	// .sops.yaml is render's only file outside its folders.
	src := string(mustReadFile(t, exampleFleet))
	f, err := fleet.Parse(exampleFleet, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	withStack, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	dir, elsewhere := t.TempDir(), t.TempDir()
	symlink(t, filepath.Join(elsewhere, "sops.yaml"), filepath.Join(dir, ".sops.yaml"))
	if _, err := Write(withStack, dir); err == nil || !strings.Contains(err.Error(), ".sops.yaml is a symbolic link") {
		t.Errorf("Write through a linked .sops.yaml: %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "sops.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was written where .sops.yaml points: %v", err)
	}
}

// TestWriteRefusesPathsOutsideItsFolders: the writer's own check, behind
// the fleet file's: a path that is not a plain name in render's folders
// is refused, whatever produced it, and nothing is written.
func TestWriteRefusesPathsOutsideItsFolders(t *testing.T) {
	for _, p := range []string{
		"../escaped.yaml",
		"apps/prod/litellm/secret-../../../../escaped.sops.yaml",
		"/etc/x.yaml",
		"notes/x.yaml",
		"clusters/a\n::stop-commands::x/x.yaml",
		"clusters//x.yaml",
		"clusters/./x.yaml",
	} {
		dir := t.TempDir()
		out := &Output{Files: map[string][]byte{"clusters/a/kustomization.yaml": []byte(Header), p: []byte(Header)}}
		if _, err := Write(out, dir); err == nil || !strings.Contains(err.Error(), "render would write") {
			t.Errorf("Write %q: %v, want refused", p, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Write %q wrote something before refusing", p)
		}
	}
}

// TestEnvironmentNamedBaseCollides: were an environment named base to get
// past the fleet file's checks, its overlays would land on apps/base:
// render says so rather than overwrite the services' bases.
func TestEnvironmentNamedBaseCollides(t *testing.T) {
	f, err := fleet.Load(exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Clusters {
		if c.Environment == "staging" {
			c.Environment = "base"
		}
	}
	_, err = Render(f)
	if err == nil || !strings.Contains(err.Error(), "two objects render to apps/base/") {
		t.Errorf("Render: %v, want a collision in apps/base", err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symbolic links unavailable here: %v", err)
	}
}

func mkdirAll(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// listTree names every entry under dir with its size, for comparing.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
