package charts

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
)

// ArchiveSource is one packaged chart (.tgz). It holds a single chart at a
// single version: asking for another is ErrNotFound.
type ArchiveSource struct {
	Path string
	// Root, when set, is the folder the archive must really be in,
	// symbolic links resolved (see FolderSource.Root).
	Root string
}

// String names the archive.
func (s *ArchiveSource) String() string { return s.Path }

// Load loads the archive if it is name at version.
func (s *ArchiveSource) Load(_ context.Context, name, version string) (*chart.Chart, error) {
	ch, err := loadChart(s.Path, s.Root)
	if err != nil {
		return nil, fmt.Errorf("load chart archive %s: %w", s.Path, err)
	}
	return checkChart(ch, name, version, s.Path)
}

// checkChart makes sure a loaded archive is the chart and version asked for.
func checkChart(ch *chart.Chart, name, version, where string) (*chart.Chart, error) {
	if ch.Name() != name {
		return nil, fmt.Errorf("%w: %s holds chart %s, not %s", ErrNotFound, where, ch.Name(), name)
	}
	if !sameVersion(ch.Metadata.Version, version) {
		return nil, fmt.Errorf("%w: %s holds %s %s, not %s", ErrNotFound, where, name, ch.Metadata.Version, version)
	}
	return ch, nil
}
