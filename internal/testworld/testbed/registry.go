package testbed

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a real OCI registry (go-containerregistry's, in memory) on
// loopback over plain http, which Flux's image-reflector-controller scans
// without any insecure flag.
type Registry struct {
	srv *httptest.Server
}

// StartRegistry starts an empty registry; Close stops it.
func StartRegistry() *Registry {
	// A nil logger makes the registry panic on its first request.
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	return &Registry{srv: httptest.NewServer(h)}
}

// Host is the registry's "127.0.0.1:PORT", the prefix of its image names.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Image returns the full name of the repository repo (e.g. "vllm/vllm-openai").
func (r *Registry) Image(repo string) string { return r.Host() + "/" + repo }

// PushTags pushes a small random image to repo under each tag.
func (r *Registry) PushTags(repo string, tags ...string) error {
	for _, tag := range tags {
		ref, err := name.NewTag(r.Image(repo)+":"+tag, name.Insecure)
		if err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		img, err := random.Image(64, 1)
		if err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("registry: push %s: %w", ref, err)
		}
	}
	return nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }
