package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"
)

// RepoSource is a classic Helm repository: an index.yaml and chart archives
// over http(s). The index is downloaded once per RepoSource (the cached copy
// is used when the download fails, e.g. offline); archives are downloaded
// once and kept, checked against the index's digest.
type RepoSource struct {
	URL string
	dir string

	getters getter.Providers

	mu    sync.Mutex
	index *repo.IndexFile
}

func newRepoSource(url string, opts Options) (*RepoSource, error) {
	base, err := cacheDir(opts)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(url))
	return &RepoSource{
		URL:     url,
		dir:     filepath.Join(base, "repo-"+hex.EncodeToString(sum[:8])),
		getters: getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}},
	}, nil
}

// String names the repository.
func (s *RepoSource) String() string { return s.URL }

// Load downloads (or reads from the cache) name at version.
func (s *RepoSource) Load(_ context.Context, name, version string) (*chart.Chart, error) {
	idx, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	var cv *repo.ChartVersion
	for _, v := range versionCandidates(version) {
		if cv, err = idx.Get(name, v); err == nil && sameVersion(cv.Version, version) {
			break
		}
		cv = nil
	}
	if cv == nil || len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: %s %s in repository %s", ErrNotFound, name, version, s.URL)
	}
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%s.tgz", name, cv.Version))
	if !archiveMatches(path, cv.Digest) {
		if err := s.download(cv.URLs[0], path, cv.Digest); err != nil {
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
func (s *RepoSource) Versions(_ context.Context, name string) ([]string, error) {
	idx, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cv := range idx.Entries[name] {
		out = append(out, cv.Version)
	}
	sort.Strings(out)
	return out, nil
}

func (s *RepoSource) loadIndex() (*repo.IndexFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index != nil {
		return s.index, nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create chart cache: %w", err)
	}
	r, err := repo.NewChartRepository(&repo.Entry{Name: "gpufleet", URL: s.URL}, s.getters)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", s.URL, err)
	}
	r.CachePath = s.dir
	path, dlErr := r.DownloadIndexFile()
	if dlErr != nil {
		// Offline: fall back to the index downloaded last time, if any.
		path = filepath.Join(s.dir, "gpufleet-index.yaml")
	}
	idx, err := repo.LoadIndexFile(path)
	if err != nil {
		if dlErr != nil {
			return nil, fmt.Errorf("download index of %s: %w", s.URL, dlErr)
		}
		return nil, fmt.Errorf("read index of %s: %w", s.URL, err)
	}
	s.index = idx
	return idx, nil
}

func (s *RepoSource) download(ref, path, digest string) error {
	url, err := repo.ResolveReferenceURL(s.URL, ref)
	if err != nil {
		return err
	}
	g, err := s.getters.ByScheme(schemeOf(url))
	if err != nil {
		return err
	}
	buf, err := g.Get(url)
	if err != nil {
		return err
	}
	if digest != "" {
		sum := sha256.Sum256(buf.Bytes())
		if hex.EncodeToString(sum[:]) != digest {
			return errors.New("archive digest does not match the repository index")
		}
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
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

func schemeOf(url string) string {
	for i := 0; i < len(url); i++ {
		if url[i] == ':' {
			return url[:i]
		}
	}
	return ""
}
