package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPages checks README.md and every page under docs/: no broken
// relative link or anchor, no line over MaxLine.
func TestPages(t *testing.T) {
	root := filepath.Join("..", "..")
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		pages = append(pages, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("found only %v: is docs/ there?", pages)
	}
	for _, err := range Check(root, pages) {
		t.Error(err)
	}
}

// TestCheckFindsBreakage: each kind of breakage is reported at its line,
// and what only looks like a link (in code) is not.
func TestCheckFindsBreakage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/other.md", "# Other\n\n## Same\n\n## Same\n\n<a id=\"kept\"></a>\n")
	write("docs/pic.svg", "<svg/>")
	write("README.md", strings.Join([]string{
		"# Top",                              // 1
		"[ok](docs/other.md#same-1)",         // 2
		"[gone](docs/missing.md)",            // 3
		"[no anchor](docs/other.md#nothing)", // 4
		"`[in code](docs/missing.md)`",       // 5
		"```",                                // 6
		"[in a fence](docs/missing.md)",      // 7
		"```",                                // 8
		"[self](#top) [html](docs/other.md#kept) ![pic](docs/pic.svg) [web](https://example.com/x#y)", // 9
		"[bad self](#nowhere)",                  // 10
		"[svg anchor](docs/pic.svg#a)",          // 11
		strings.Repeat("x", MaxLine+1),          // 12
		"[`[policy]`](docs/other.md#no-policy)", // 13
	}, "\n"))
	var got []string
	for _, err := range Check(dir, []string{"README.md", "docs/other.md"}) {
		msg := err.Error()
		got = append(got, msg[:strings.Index(msg, ": ")])
	}
	want := []string{"README.md:3", "README.md:4", "README.md:10", "README.md:11", "README.md:12", "README.md:13"}
	if !slices.Equal(got, want) {
		t.Errorf("errors at %v, want %v", got, want)
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The controller in each cluster's folder": "the-controller-in-each-clusters-folder",
		"Flux or Argo CD":                         "flux-or-argo-cd",
		"`.spec.targetVersion`":                   "spectargetversion",
		"`[clusters.<name>]`":                     "clustersname",
		"`[[waves]]`":                             "waves",
		"Nodes & pods":                            "nodes--pods",
		"See [the gate](gate.md) now":             "see-the-gate-now",
		"max_unavailable, 2026":                   "max_unavailable-2026",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
