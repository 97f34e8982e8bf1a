package charts

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/registry"
)

// TestOCISource pushes the fixture chart to a real registry (the CNCF
// distribution registry, in memory, in process) with Helm's client and loads
// it back through an oci:// source.
func TestOCISource(t *testing.T) {
	// The registry logs every request through logrus' global logger.
	logrus.SetOutput(io.Discard)
	config := &configuration.Configuration{}
	config.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	config.Log.Level = "error"
	app := handlers.NewApp(context.Background(), config)
	srv := httptest.NewServer(app)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	archive := packageFixture(t, "2.0.0", t.TempDir())
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptHTTPClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Push(data, host+"/charts/widget:2.0.0"); err != nil {
		t.Fatalf("push: %v", err)
	}

	cache := t.TempDir()
	src, err := NewSource("oci://"+host+"/charts", Options{CacheDir: cache, PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := src.Load(context.Background(), "widget", "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "widget" || ch.Metadata.Version != "2.0.0" {
		t.Errorf("loaded %s %s", ch.Name(), ch.Metadata.Version)
	}
	if _, err := src.Load(context.Background(), "widget", "1.0.0"); err == nil {
		t.Error("a version not pushed loaded")
	}
	// The archive is cached: it loads with the registry gone.
	srv.Close()
	if _, err := src.Load(context.Background(), "widget", "2.0.0"); err != nil {
		t.Errorf("from the cache: %v", err)
	}

}
