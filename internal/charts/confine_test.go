package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// secretText stands for a file outside the chart a job can read (a
// kubeconfig, a token).
const secretText = "TOP-SECRET-KUBECONFIG-TOKEN"

// leakyChart writes, under dir/<name>/<version>/, a chart whose template
// fails with the content of files/leak, as a hostile change would write it,
// and returns the chart's folder.
func leakyChart(t *testing.T, dir, name, version string) string {
	t.Helper()
	chartDir := filepath.Join(dir, name, version)
	for file, data := range map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"templates/leak.yaml":    "{{ fail (.Files.Get \"files/leak\") }}\n",
		"files/inside.txt":       "a file of the chart\n",
		"templates/inside.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\ndata:\n  text: {{ .Files.Get \"files/alias\" | quote }}\n",
		"templates/_helpers.tpl": "",
	} {
		p := filepath.Join(chartDir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("inside.txt", filepath.Join(chartDir, "files", "alias")); err != nil {
		t.Skipf("symbolic links unavailable here: %v", err)
	}
	return chartDir
}

// TestChartLinksStayInTheChart: a symbolic link that leaves a chart's
// folder is refused before Helm reads anything through it, whoever gives
// the folder, and the linked file's content is in no error; a link inside
// the chart, and links that only find the chart (a mirror's version links),
// still work. With a Root (a folder of the fleet repository), nothing
// outside the root is read, links to find the chart included.
func TestChartLinksStayInTheChart(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	secret := filepath.Join(root, "secret")
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")

	// A link inside the chart is read like the file it names.
	chartDir := leakyChart(t, filepath.Join(repo, "charts"), "leaky", "1.0.0")
	if err := os.Remove(filepath.Join(chartDir, "templates", "leak.yaml")); err != nil {
		t.Fatal(err)
	}
	ch, err := (&FolderSource{Dir: filepath.Join(repo, "charts"), Root: repo}).Load(ctx, "leaky", "1.0.0")
	if err != nil {
		t.Fatalf("a link inside the chart: %v", err)
	}
	objs, err := Render(ch, nil, RenderOptions{})
	if err != nil || len(objs) != 1 {
		t.Fatalf("a link inside the chart: %v %v", objs, err)
	}
	if text, _, _ := unstructured.NestedString(objs[0].Object.Object, "data", "text"); text != "a file of the chart\n" {
		t.Errorf("a link inside the chart renders %q, want the file it names", text)
	}

	// files/leak -> ../../../secret, as a pull request would commit it.
	leaky := leakyChart(t, filepath.Join(repo, "charts"), "leaky", "2.0.0")
	if err := os.Symlink(filepath.Join("..", "..", "..", "..", "..", "secret"), filepath.Join(leaky, "files", "leak")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(leaky, "files", "leak")); err != nil || string(b) != secretText {
		t.Fatalf("the test's link does not reach the secret: %q %v", b, err)
	}
	for _, src := range []Source{
		&FolderSource{Dir: filepath.Join(repo, "charts"), Root: repo},
		&FolderSource{Dir: filepath.Join(repo, "charts")},
	} {
		_, err := src.Load(ctx, "leaky", "2.0.0")
		if !errors.Is(err, ErrLinkOut) || !strings.Contains(err.Error(), "files/leak") || strings.Contains(err.Error(), secretText) {
			t.Errorf("%+v: a link out of the chart: %v; want ErrLinkOut naming files/leak, without the file's content", src, err)
		}
	}

	// A link to a folder holding it would make Helm's walk loop.
	loop := leakyChart(t, filepath.Join(repo, "charts"), "loop", "1.0.0")
	if err := os.Symlink("..", filepath.Join(loop, "files", "up")); err != nil {
		t.Fatal(err)
	}
	if _, err := (&FolderSource{Dir: filepath.Join(repo, "charts")}).Load(ctx, "loop", "1.0.0"); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("a link making a loop: %v, want refused", err)
	}

	// Outside the root: a version folder linked out of the repository, and
	// an archive there.
	store := filepath.Join(root, "store")
	leakyChart(t, store, "elsewhere", "1.0.0")
	if err := os.MkdirAll(filepath.Join(repo, "charts", "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "..", "store", "elsewhere", "1.0.0"), filepath.Join(repo, "charts", "elsewhere", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := (&FolderSource{Dir: filepath.Join(repo, "charts"), Root: repo}).Load(ctx, "elsewhere", "1.0.0"); err == nil || !strings.Contains(err.Error(), "out of the fleet repository") {
		t.Errorf("a version linked out of the repository, with a root: %v, want refused", err)
	}
	if _, err := (&FolderSource{Dir: filepath.Join(repo, "charts")}).Load(ctx, "elsewhere", "1.0.0"); err != nil {
		t.Errorf("a version linked into a store, given by the operator: %v, want loaded", err)
	}
	archive := filepath.Join(root, "elsewhere-1.0.0.tgz")
	writeArchive(t, archive, map[string]string{"elsewhere/Chart.yaml": "apiVersion: v2\nname: elsewhere\nversion: 1.0.0\n"}, nil)
	if err := os.Symlink(archive, filepath.Join(repo, "charts", "elsewhere-1.0.0.tgz")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSource(filepath.Join(repo, "charts", "elsewhere-1.0.0.tgz"), Options{Root: repo}); err == nil {
		t.Error("an archive linked out of the repository, with a root: want refused")
	}
	if _, err := NewSource(filepath.Join(root, "store"), Options{Root: repo}); err == nil {
		t.Error("a chart folder outside the root: want refused")
	}
}

// TestArchiveEntriesStayInTheArchive pins what Helm's archive loader does
// with a hostile .tgz, which gpufleet relies on instead of checking again:
// a symbolic link entry is read as an empty file, never followed, and an
// entry named out of the archive (../, an absolute path) is refused.
func TestArchiveEntriesStayInTheArchive(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"leaky/Chart.yaml":          "apiVersion: v2\nname: leaky\nversion: 1.0.0\n",
		"leaky/templates/leak.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  text: {{ .Files.Get \"files/leak\" | quote }}\n",
	}
	path := filepath.Join(dir, "leaky-1.0.0.tgz")
	writeArchive(t, path, files, map[string]string{"leaky/files/leak": secret})
	ch, err := (&ArchiveSource{Path: path}).Load(context.Background(), "leaky", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(ch, nil, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if text, _, _ := unstructured.NestedString(o.Object.Object, "data", "text"); strings.Contains(text, secretText) {
			t.Errorf("a link entry of an archive was followed: %q", text)
		}
	}
	for _, name := range []string{"leaky/../../escape.yaml", "leaky//abs.yaml"} {
		bad := filepath.Join(dir, "bad.tgz")
		writeArchive(t, bad, map[string]string{"leaky/Chart.yaml": files["leaky/Chart.yaml"], name: "x"}, nil)
		if _, err := (&ArchiveSource{Path: bad}).Load(context.Background(), "leaky", "1.0.0"); err == nil {
			t.Errorf("an archive entry %s: loaded, want refused", name)
		}
	}
}

// TestTemplateErrorHidesItsMessage: a template that fails with what it
// read is reported by chart and template, never by its message.
func TestTemplateErrorHidesItsMessage(t *testing.T) {
	dir := t.TempDir()
	chartDir := leakyChart(t, dir, "leaky", "1.0.0")
	if err := os.WriteFile(filepath.Join(chartDir, "files", "leak"), []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, err := (&FolderSource{Dir: dir}).Load(context.Background(), "leaky", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(ch, nil, RenderOptions{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Template != "leaky/templates/leak.yaml:1:3" || strings.Contains(err.Error(), secretText) || !strings.Contains(err.Error(), "template leaky/templates/leak.yaml:1:3 failed") {
		t.Errorf("Render: %v; want a TemplateError naming leaky/templates/leak.yaml:1:3, without the message", err)
	}
	if te != nil && !strings.Contains(te.Err.Error(), secretText) {
		t.Errorf("TemplateError.Err lost Helm's error: %v", te.Err)
	}
}

// writeArchive writes a chart archive of files, and of link entries
// (name → target) that a hostile archive may hold.
func writeArchive(t *testing.T, path string, files, links map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
