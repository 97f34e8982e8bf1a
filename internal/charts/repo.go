package charts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// RepoSource is a classic Helm repository: an index.yaml and chart archives
// over http(s). The index is downloaded once per RepoSource (the cached copy
// is used when the download fails, e.g. offline); archives are downloaded
// once and kept, checked against the index's digest.
//
// It reads the repository with net/http rather than Helm's repo and getter
// packages, whose imports reach kubectl and Go's plugin package; the cache
// file is the one Helm writes (<name>-index.yaml).
type RepoSource struct {
	URL string
	dir string

	client *http.Client

	mu    sync.Mutex
	index *repoIndex
}

// repoIndex is the part of a repository's index.yaml gpufleet reads.
type repoIndex struct {
	APIVersion string                       `json:"apiVersion"`
	Entries    map[string][]*repoIndexEntry `json:"entries"`
}

type repoIndexEntry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// get finds name at exactly version.
func (idx *repoIndex) get(name, version string) *repoIndexEntry {
	for _, cv := range idx.Entries[name] {
		if cv != nil && cv.Version == version {
			return cv
		}
	}
	return nil
}

// indexCacheFile is where the index is kept, named as Helm names it.
const indexCacheFile = "gpufleet-index.yaml"

func newRepoSource(url string, opts Options) (*RepoSource, error) {
	base, err := cacheDir(opts)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(url))
	return &RepoSource{
		URL:    url,
		dir:    filepath.Join(base, "repo-"+hex.EncodeToString(sum[:8])),
		client: &http.Client{Transport: http.DefaultTransport},
	}, nil
}

// String names the repository.
func (s *RepoSource) String() string { return s.URL }

// Load downloads (or reads from the cache) name at version.
func (s *RepoSource) Load(ctx context.Context, name, version string) (*chart.Chart, error) {
	idx, err := s.loadIndex(ctx)
	if err != nil {
		return nil, err
	}
	var cv *repoIndexEntry
	for _, v := range versionCandidates(version) {
		if cv = idx.get(name, v); cv != nil {
			break
		}
	}
	if cv == nil || len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: %s %s in repository %s", ErrNotFound, name, version, s.URL)
	}
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%s.tgz", name, cv.Version))
	if !archiveMatches(path, cv.Digest) {
		if err := s.download(ctx, cv.URLs[0], path, cv.Digest); err != nil {
			return nil, fmt.Errorf("download %s %s: %w", name, version, err)
		}
	}
	ch, err := loader.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load chart archive %s: %w", path, err)
	}
	return checkChart(ch, name, version, s.URL)
}

// Versions lists the versions of name in the repository index.
func (s *RepoSource) Versions(ctx context.Context, name string) ([]string, error) {
	idx, err := s.loadIndex(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cv := range idx.Entries[name] {
		if cv != nil {
			out = append(out, cv.Version)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *RepoSource) loadIndex(ctx context.Context) (*repoIndex, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index != nil {
		return s.index, nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create chart cache: %w", err)
	}
	cached := filepath.Join(s.dir, indexCacheFile)
	idx, dlErr := s.downloadIndex(ctx, cached)
	if dlErr != nil {
		// Offline: fall back to the index downloaded last time, if any.
		b, err := os.ReadFile(cached)
		if err == nil {
			idx, err = parseIndex(b)
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("download index of %s: %w", s.URL, dlErr)
			}
			return nil, fmt.Errorf("read index of %s: %w", s.URL, err)
		}
	}
	s.index = idx
	return idx, nil
}

// downloadIndex fetches index.yaml beside the repository URL and, when it
// parses, keeps it at cached.
func (s *RepoSource) downloadIndex(ctx context.Context, cached string) (*repoIndex, error) {
	u, err := resolveReferenceURL(s.URL, "index.yaml")
	if err != nil {
		return nil, err
	}
	b, err := s.get(ctx, u)
	if err != nil {
		return nil, err
	}
	idx, err := parseIndex(b)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(cached, b); err != nil {
		return nil, err
	}
	return idx, nil
}

// parseIndex reads an index.yaml (YAML or JSON), as Helm does: an index
// without an apiVersion is refused.
func parseIndex(b []byte) (*repoIndex, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("empty index.yaml file")
	}
	var idx repoIndex
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return nil, err
	}
	if idx.APIVersion == "" {
		return nil, errors.New("no API version specified")
	}
	return &idx, nil
}

func (s *RepoSource) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to fetch %s : %s", u, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func (s *RepoSource) download(ctx context.Context, ref, path, digest string) error {
	u, err := resolveReferenceURL(s.URL, ref)
	if err != nil {
		return err
	}
	b, err := s.get(ctx, u)
	if err != nil {
		return err
	}
	if digest != "" {
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != digest {
			return errors.New("archive digest does not match the repository index")
		}
	}
	return writeFileAtomic(path, b)
}

// resolveReferenceURL resolves a chart URL from the index against the
// repository URL, as Helm's repo.ResolveReferenceURL: relative to the
// repository (with a trailing slash), keeping the repository's query.
func resolveReferenceURL(baseURL, refURL string) (string, error) {
	ref, err := url.Parse(refURL)
	if err != nil {
		return "", fmt.Errorf("failed to parse %s as URL: %w", refURL, err)
	}
	if ref.IsAbs() {
		return refURL, nil
	}
	base, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("failed to parse %s as URL: %w", baseURL, err)
	}
	base.RawPath = strings.TrimSuffix(base.RawPath, "/") + "/"
	base.Path = strings.TrimSuffix(base.Path, "/") + "/"
	resolved := base.ResolveReference(ref)
	resolved.RawQuery = base.RawQuery
	return resolved.String(), nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".part"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// archiveMatches says whether a cached archive exists and has digest (any
// content when the index gives none).
func archiveMatches(path, digest string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	if digest == "" {
		return true
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]) == digest
}
