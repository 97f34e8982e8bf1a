package charts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fsutil"
)

// FolderSource finds charts in a folder laid out as <chart>/<version>/. The
// chart is that folder itself, a folder below it (up to three levels, e.g.
// gpu-operator/v26.7.0/deployments/gpu-operator) whose Chart.yaml has the
// chart's name, or a <chart>-<version>.tgz archive in it. Packaged charts
// side by side (<chart>-<version>.tgz, as `helm package` writes them) are
// found too.
//
// Symbolic links are followed to find a chart: a mirror of several
// versions is often kept as <chart>/<version> links into a store of
// unpacked releases, and a link must read like the folder it points to.
// A chart's own files are another matter: once found, the chart is read
// from its folder only, and a link in it that leaves that folder is
// refused (see loadChartDir), since a template can print any file of its
// chart. With Root set (a chart folder the fleet repository holds),
// nothing outside Root is read at all, links to find the chart included.
type FolderSource struct {
	Dir string
	// Root, when set, is the folder the source must stay inside: Dir, the
	// version folders, the chart and every file of it must really be in
	// Root, symbolic links resolved. A chart folder named by the fleet
	// file has the fleet repository's root here.
	Root string
}

// FolderLayouts says, for messages, how a chart folder may be laid out.
const FolderLayouts = "<chart>/<version>/ (the chart, a folder up to three levels below it whose Chart.yaml names the chart, or a <chart>-<version>.tgz in it) or <chart>-<version>.tgz side by side; symbolic links are followed to find the chart, never out of the chart's own folder"

// String names the folder.
func (s *FolderSource) String() string { return s.Dir }

// Load loads name at version.
func (s *FolderSource) Load(_ context.Context, name, version string) (*chart.Chart, error) {
	for _, v := range versionCandidates(version) {
		dir := filepath.Join(s.Dir, name, v)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if err := confine(s.Root, dir); err != nil {
			return nil, err
		}
		path, err := findChart(dir, name, s.Root)
		if err != nil {
			return nil, err
		}
		ch, err := loadChart(path, s.Root)
		if err != nil {
			return nil, fmt.Errorf("load chart %s %s from %s: %w", name, version, path, err)
		}
		pinDevelVersion(ch, version)
		return ch, nil
	}
	// A folder of packaged charts, as `helm package` leaves them.
	for _, v := range versionCandidates(version) {
		path := filepath.Join(s.Dir, name+"-"+v+".tgz")
		if _, err := os.Stat(path); err == nil {
			return (&ArchiveSource{Path: path, Root: s.Root}).Load(context.Background(), name, version)
		}
	}
	return nil, fmt.Errorf("%w: %s %s in %s (no folder %s, no %s-%s.tgz; accepted layouts: %s)", ErrNotFound, name, version, s.Dir, filepath.Join(name, version), name, version, FolderLayouts)
}

// Versions lists the version folders of name.
func (s *FolderSource) Versions(_ context.Context, name string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("list versions of %s: %w", name, err)
	}
	var out []string
	for _, e := range entries {
		if isDir(filepath.Join(s.Dir, name), e) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// isDir reports whether the entry in parent is a folder or a symbolic link
// to one.
func isDir(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && fi.IsDir()
}

// findChart returns the chart directory or archive for name under dir,
// preferring the shallowest match; directories named charts are not entered,
// since they hold subcharts. Symbolic links to folders are entered like
// folders; the depth limit also ends any loop of links. With root set, a
// link that leaves root is refused before anything behind it is read.
func findChart(dir, name, root string) (string, error) {
	const maxDepth = 3
	var found []string
	var walk func(path string, depth int) error
	walk = func(path string, depth int) error {
		if err := confine(root, filepath.Join(path, "Chart.yaml")); err == nil || errors.Is(err, fs.ErrNotExist) {
			if chartName(filepath.Join(path, "Chart.yaml")) == name {
				found = append(found, path)
			}
		} else {
			return err
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			child := filepath.Join(path, e.Name())
			if isDir(path, e) {
				if depth+1 > maxDepth || e.Name() == "charts" || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if err := confine(root, child); err != nil {
					return err
				}
				if err := walk(child, depth+1); err != nil {
					return err
				}
				continue
			}
			if depth == 0 && strings.HasPrefix(e.Name(), name+"-") && strings.HasSuffix(e.Name(), ".tgz") {
				found = append(found, child)
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		if errors.Is(err, fsutil.ErrOutside) {
			return "", err
		}
		return "", fmt.Errorf("look for chart %s in %s: %w", name, dir, err)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%w: no Chart.yaml named %s in %s (accepted layouts: %s)", ErrNotFound, name, dir, FolderLayouts)
	}
	sort.SliceStable(found, func(i, j int) bool {
		return strings.Count(found[i], string(filepath.Separator)) < strings.Count(found[j], string(filepath.Separator))
	})
	return found[0], nil
}

// chartName reads the name in a Chart.yaml, or "" when there is none.
func chartName(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var md struct {
		Name string `json:"name"`
	}
	if yaml.Unmarshal(b, &md) != nil {
		return ""
	}
	return md.Name
}
