package charts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
)

// ErrNotFound is wrapped by the errors of a source that does not hold the
// chart or version asked for.
var ErrNotFound = errors.New("chart not found")

// Source finds a chart by name and version.
type Source interface {
	// Load returns the chart name at version. The chart is the caller's:
	// rendering it does not change what a later Load returns.
	Load(ctx context.Context, name, version string) (*chart.Chart, error)
	// String names the source in messages.
	String() string
}

// Lister is a Source that can list the versions of a chart it holds.
type Lister interface {
	Versions(ctx context.Context, name string) ([]string, error)
}

// Options tune NewSource.
type Options struct {
	// CacheDir holds downloaded indexes and archives. Empty means
	// gpufleet/charts under the user's cache directory.
	CacheDir string
	// PlainHTTP talks to an OCI registry over http rather than https (for a
	// registry on localhost).
	PlainHTTP bool
	// Root, for a folder or archive, is the folder nothing may be read
	// outside of (FolderSource.Root): the fleet repository's root when the
	// fleet file names the charts, empty for a source the operator gives.
	Root string
}

// NewSource returns the source ref names: an oci:// reference, an http(s)
// Helm repository URL, a .tgz chart archive, or a folder of charts.
func NewSource(ref string, opts Options) (Source, error) {
	if ref == "" {
		return nil, errors.New("no chart source given")
	}
	switch {
	case strings.HasPrefix(ref, "oci://"):
		return newOCISource(ref, opts)
	case strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "https://"):
		return newRepoSource(ref, opts)
	}
	fi, err := os.Stat(ref)
	if err != nil {
		return nil, fmt.Errorf("chart source %s: %w", ref, err)
	}
	if err := confine(opts.Root, ref); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &FolderSource{Dir: ref, Root: opts.Root}, nil
	}
	if strings.HasSuffix(ref, ".tgz") || strings.HasSuffix(ref, ".tar.gz") {
		return &ArchiveSource{Path: ref, Root: opts.Root}, nil
	}
	return nil, fmt.Errorf("chart source %s: neither a folder, a .tgz archive, an http(s) repository nor an oci:// reference", ref)
}

func cacheDir(opts Options) (string, error) {
	if opts.CacheDir != "" {
		return opts.CacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find cache directory: %w", err)
	}
	return filepath.Join(base, "gpufleet", "charts"), nil
}

// pinDevelVersion fixes up a chart taken from the operator's git tree at a
// release tag: there it says version v1.0.0-devel and its images default to
// development tags. The version asked for becomes the chart's version and
// app version, and so the default of every image tag derived from them.
func pinDevelVersion(ch *chart.Chart, version string) {
	if ch.Metadata == nil || !strings.HasSuffix(ch.Metadata.Version, "-devel") {
		return
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
}
