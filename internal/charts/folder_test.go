package charts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// copyTree copies the folder src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFolderSourceFollowsSymlinkedVersions: a chart folder laid out as
// <chart>/<version>/ whose entries are symbolic links (a mirror kept as links
// into a store of unpacked releases) reads like one of real folders, at
// every level; and when no layout matches, the error says which are accepted.
func TestFolderSourceFollowsSymlinkedVersions(t *testing.T) {
	root := t.TempDir()
	store, mirror := filepath.Join(root, "store"), filepath.Join(root, "mirror")
	// store/widget-1.0.0/deploy/widget/Chart.yaml …, and for 2.0.0 a store
	// entry whose deploy folder is itself a link.
	copyTree(t, filepath.Join(fixtures, "widget", "1.0.0"), filepath.Join(store, "widget-1.0.0"))
	copyTree(t, filepath.Join(fixtures, "widget", "2.0.0", "deploy"), filepath.Join(store, "widget-2.0.0-deploy"))
	if err := os.MkdirAll(filepath.Join(store, "widget-2.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		filepath.Join(store, "widget-2.0.0", "deploy"): filepath.Join("..", "widget-2.0.0-deploy"),
		filepath.Join(mirror, "widget", "1.0.0"):       filepath.Join("..", "..", "store", "widget-1.0.0"),
		filepath.Join(mirror, "widget", "v2.0.0"):      filepath.Join(store, "widget-2.0.0"),
	}
	if err := os.MkdirAll(filepath.Join(mirror, "widget"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symbolic links unavailable here: %v", err)
		}
	}
	// A link to a folder that is not a chart version, and a dangling link.
	if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(mirror, "widget", "3.0.0")); err != nil {
		t.Fatal(err)
	}

	src := &FolderSource{Dir: mirror}
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		ch, err := src.Load(ctx, "widget", v)
		if err != nil {
			t.Fatalf("Load(widget, %s) through symbolic links: %v", v, err)
		}
		if got := ch.Metadata.Version; got != v {
			t.Errorf("Load(widget, %s) loaded version %s", v, got)
		}
		if len(ch.Templates) == 0 {
			t.Errorf("Load(widget, %s): no templates read through the links", v)
		}
	}
	got, err := src.Versions(ctx, "widget")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"1.0.0", "v2.0.0"}; !slices.Equal(got, want) {
		t.Errorf("Versions = %v, want %v (linked folders count, a dangling link does not)", got, want)
	}

	// No layout matches: say which are accepted.
	empty := filepath.Join(root, "empty", "widget", "1.0.0")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src     *FolderSource
		version string
	}{
		{&FolderSource{Dir: filepath.Join(root, "empty")}, "1.0.0"},
		{src, "9.9.9"},
	} {
		_, err := tc.src.Load(ctx, "widget", tc.version)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "accepted layouts: "+FolderLayouts) {
			t.Errorf("Load(widget, %s) from %s: %v; want ErrNotFound naming the accepted layouts", tc.version, tc.src.Dir, err)
		}
	}
}
