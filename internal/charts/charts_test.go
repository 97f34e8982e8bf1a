package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

const fixtures = "testdata/charts"

func objectNames(objs []Object) []string {
	var out []string
	for _, o := range objs {
		s := o.Object.GetKind() + "/" + o.Object.GetName()
		if o.Hook != "" {
			s += " (hook " + o.Hook + ")"
		}
		out = append(out, s+" from "+o.Template)
	}
	return out
}

func TestFolderSourceRender(t *testing.T) {
	src := &FolderSource{Dir: fixtures}
	ch, err := src.Load(context.Background(), "widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(ch, map[string]any{"gadget": map[string]any{"enabled": true}}, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap/widget-cleanup (hook pre-delete) from widget/templates/hook.yaml",
		"ConfigMap/widget-settings from widget/templates/configmap.yaml",
		"Gadget/widget-gadget from widget/charts/gadget/templates/gadget.yaml",
		"Widget/widget from widget/templates/widget.yaml",
	}
	if diff := cmp.Diff(want, objectNames(objs)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Rendering must not change the loaded chart: the subchart was enabled
	// above, and is disabled by default.
	objs, err = Render(ch, nil, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Errorf("second render: got %q, want 3 objects without the gadget", objectNames(objs))
	}
	crds, err := CRDs(ch)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"widgets.example.gpufleet.io", "gadgets.example.gpufleet.io"}, names); diff != "" {
		t.Errorf("CRDs (-want +got):\n%s", diff)
	}
}

func TestRenderKubeVersion(t *testing.T) {
	ch, err := (&FolderSource{Dir: fixtures}).Load(context.Background(), "widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(ch, nil, RenderOptions{KubeVersion: "v1.20.0"})
	if err == nil || !strings.Contains(err.Error(), "requires Kubernetes >= 1.21.0-0, not v1.20.0") {
		t.Errorf("got %v, want a Kubernetes version error", err)
	}
}

func TestSourceNotFound(t *testing.T) {
	src := &FolderSource{Dir: fixtures}
	for _, tc := range [][2]string{{"widget", "9.9.9"}, {"nochart", "1.0.0"}} {
		if _, err := src.Load(context.Background(), tc[0], tc[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%s, %s) = %v, want ErrNotFound", tc[0], tc[1], err)
		}
	}
}

// packageFixture writes widget at version as a .tgz into dir.
func packageFixture(t *testing.T, version, dir string) string {
	t.Helper()
	ch, err := loader.Load(filepath.Join(fixtures, "widget", version, "deploy", "widget"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestArchiveSource(t *testing.T) {
	path := packageFixture(t, "1.0.0", t.TempDir())
	src, err := NewSource(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*ArchiveSource); !ok {
		t.Fatalf("NewSource(%s) = %T, want an archive source", path, src)
	}
	ch, err := src.Load(context.Background(), "widget", "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "1.0.0" {
		t.Errorf("version %s", ch.Metadata.Version)
	}
	if _, err := src.Load(context.Background(), "widget", "2.0.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another version: got %v, want ErrNotFound", err)
	}
	// A folder of packaged charts.
	folder := &FolderSource{Dir: filepath.Dir(path)}
	if _, err := folder.Load(context.Background(), "widget", "v1.0.0"); err != nil {
		t.Errorf("packaged chart in a folder: %v", err)
	}
}

func TestRepoSource(t *testing.T) {
	dir := t.TempDir()
	packageFixture(t, "1.0.0", dir)
	packageFixture(t, "2.0.0", dir)
	var requests []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.Path)
		if r.URL.Path == "/index.yaml" {
			idx, err := repo.IndexDirectory(dir, srv.URL)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			out := filepath.Join(t.TempDir(), "index.yaml")
			if err := idx.WriteFile(out, 0o644); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			http.ServeFile(w, r, out)
			return
		}
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	defer srv.Close()

	cache := t.TempDir()
	load := func(version string) error {
		src, err := NewSource(srv.URL, Options{CacheDir: cache})
		if err != nil {
			return err
		}
		ch, err := src.Load(context.Background(), "widget", version)
		if err == nil && !sameVersion(ch.Metadata.Version, version) {
			t.Errorf("loaded %s, want %s", ch.Metadata.Version, version)
		}
		return err
	}
	if err := load("v2.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := load("2.0.0"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/index.yaml", "/widget-2.0.0.tgz", "/index.yaml"}
	if diff := cmp.Diff(want, requests); diff != "" {
		t.Errorf("requests (-want +got): the archive should come from the cache the second time\n%s", diff)
	}
	if err := load("3.0.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing version: got %v, want ErrNotFound", err)
	}
	// Offline: the index downloaded before is used.
	srv.Close()
	if err := load("2.0.0"); err != nil {
		t.Errorf("offline with a cached index and archive: %v", err)
	}
}

func TestRenderManifestsIsStable(t *testing.T) {
	src := &FolderSource{Dir: fixtures}
	ctx := context.Background()
	a, err := RenderManifests(ctx, src, "widget", "1.0.0", nil, RenderOptions{Namespace: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := RenderManifests(ctx, src, "widget", "1.0.0", nil, RenderOptions{Namespace: "tools"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Fatalf("second render differs:\n%s", diff)
		}
	}
	var heads []string
	for doc := range strings.SplitSeq(string(a), "---\n") {
		var kind, name, ns string
		for line := range strings.SplitSeq(doc, "\n") {
			switch {
			case strings.HasPrefix(line, "kind: "):
				kind = strings.TrimPrefix(line, "kind: ")
			case strings.HasPrefix(line, "  name: ") && name == "":
				name = strings.TrimPrefix(line, "  name: ")
			case strings.HasPrefix(line, "  namespace: "):
				ns = strings.TrimPrefix(line, "  namespace: ")
			}
		}
		heads = append(heads, kind+" "+ns+"/"+name)
	}
	want := []string{
		// The gadget subchart is disabled: no gadget CRD.
		"CustomResourceDefinition /widgets.example.gpufleet.io",
		"ConfigMap tools/widget-settings",
		"Widget tools/widget",
	}
	if diff := cmp.Diff(want, heads); diff != "" {
		t.Errorf("manifests (-want +got):\n%s\n%s", diff, a)
	}
}

func TestCompareVersions(t *testing.T) {
	in := []string{"v25.10.1", "v24.6.2", "v25.3.4", "v26.7.0", "v24.9.2"}
	got := append([]string(nil), in...)
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if CompareVersions(got[j], got[i]) < 0 {
				got[i], got[j] = got[j], got[i]
			}
		}
	}
	want := []string{"v24.6.2", "v24.9.2", "v25.3.4", "v25.10.1", "v26.7.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestRepoSourceRelativeURLsAndDigest(t *testing.T) {
	dir := t.TempDir()
	path := packageFixture(t, "1.0.0", dir)
	index := "apiVersion: v1\nentries:\n  widget:\n  - name: widget\n    version: 1.0.0\n    urls: [archives/" + filepath.Base(path) + "]\n    digest: %s\n"
	digest := "0000"
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.Path+"?"+r.URL.RawQuery)
		switch r.URL.Path {
		case "/charts/index.yaml":
			fmt.Fprintf(w, index, digest)
		case "/charts/archives/" + filepath.Base(path):
			http.ServeFile(w, r, path)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	load := func() error {
		src, err := NewSource(srv.URL+"/charts?token=t", Options{CacheDir: t.TempDir()})
		if err != nil {
			return err
		}
		_, err = src.Load(context.Background(), "widget", "1.0.0")
		return err
	}
	if err := load(); err == nil || !strings.Contains(err.Error(), "archive digest does not match") {
		t.Errorf("wrong digest: got %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	digest = hex.EncodeToString(sum[:])
	requests = nil
	if err := load(); err != nil {
		t.Fatal(err)
	}
	want := []string{"/charts/index.yaml?token=t", "/charts/archives/" + filepath.Base(path) + "?token=t"}
	if diff := cmp.Diff(want, requests); diff != "" {
		t.Errorf("requests (-want +got): archive URLs resolve against the repository URL\n%s", diff)
	}
	index = "entries: {}\ndigest: %s\n"
	if err := load(); err == nil || !strings.Contains(err.Error(), "no API version specified") {
		t.Errorf("index without apiVersion: got %v", err)
	}
}
