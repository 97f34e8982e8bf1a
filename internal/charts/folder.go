package charts

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// FolderSource finds charts in a folder laid out as <chart>/<version>/. The
// chart is that folder itself, a folder below it (up to three levels, e.g.
// gpu-operator/v26.7.0/deployments/gpu-operator) whose Chart.yaml has the
// chart's name, or a <chart>-<version>.tgz archive in it. Packaged charts
// side by side (<chart>-<version>.tgz, as `helm package` writes them) are
// found too.
//
// Symbolic links are followed at every level: a mirror of several versions
// is often kept as <chart>/<version> links into a store of unpacked
// releases, and a link must read like the folder it points to.
type FolderSource struct {
	Dir string
}

// FolderLayouts says, for messages, how a chart folder may be laid out.
const FolderLayouts = "<chart>/<version>/ (the chart, a folder up to three levels below it whose Chart.yaml names the chart, or a <chart>-<version>.tgz in it) or <chart>-<version>.tgz side by side; symbolic links are followed"

// String names the folder.
func (s *FolderSource) String() string { return s.Dir }

// Load loads name at version.
func (s *FolderSource) Load(_ context.Context, name, version string) (*chart.Chart, error) {
	for _, v := range versionCandidates(version) {
		dir := filepath.Join(s.Dir, name, v)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		path, err := findChart(dir, name)
		if err != nil {
			return nil, err
		}
		ch, err := loader.Load(path)
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
			return (&ArchiveSource{Path: path}).Load(context.Background(), name, version)
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
// folders; the depth limit also ends any loop of links.
func findChart(dir, name string) (string, error) {
	const maxDepth = 3
	var found []string
	var walk func(path string, depth int) error
	walk = func(path string, depth int) error {
		if chartName(filepath.Join(path, "Chart.yaml")) == name {
			found = append(found, path)
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
