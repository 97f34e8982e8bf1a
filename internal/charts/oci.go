package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
)

// OCISource is a Helm chart registry: oci://host/path holds charts as
// host/path/<chart>:<version>. Pulled archives are cached on disk, as a
// chart version in a registry does not change.
type OCISource struct {
	Ref string
	dir string

	plainHTTP bool
}

func newOCISource(ref string, opts Options) (*OCISource, error) {
	base, err := cacheDir(opts)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(ref))
	return &OCISource{Ref: strings.TrimSuffix(ref, "/"), dir: filepath.Join(base, "oci-"+hex.EncodeToString(sum[:8])), plainHTTP: opts.PlainHTTP}, nil
}

// String names the registry path.
func (s *OCISource) String() string { return s.Ref }

// Load pulls name at version (or reads it from the cache).
func (s *OCISource) Load(_ context.Context, name, version string) (*chart.Chart, error) {
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%s.tgz", name, version))
	if _, err := os.Stat(path); err != nil {
		if err := s.pull(name, version, path); err != nil {
			return nil, err
		}
	}
	ch, err := loader.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load chart archive %s: %w", path, err)
	}
	return checkChart(ch, name, version, s.Ref)
}

func (s *OCISource) pull(name, version, path string) error {
	var opts []registry.ClientOption
	if s.plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("registry client: %w", err)
	}
	// OCI tags cannot hold "+": Helm stores build metadata as "_".
	ref := strings.TrimPrefix(s.Ref, "oci://") + "/" + name + ":" + strings.ReplaceAll(version, "+", "_")
	res, err := client.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("create chart cache: %w", err)
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, res.Chart.Data, 0o644); err != nil {
		return fmt.Errorf("cache %s: %w", ref, err)
	}
	return os.Rename(tmp, path)
}
