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
type FolderSource struct {
	Dir string
}

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
	return nil, fmt.Errorf("%w: %s %s in %s (no folder %s)", ErrNotFound, name, version, s.Dir, filepath.Join(name, version))
}

// Versions lists the version folders of name.
func (s *FolderSource) Versions(_ context.Context, name string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("list versions of %s: %w", name, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// findChart returns the chart directory or archive for name under dir,
// preferring the shallowest match; directories named charts are not entered,
// since they hold subcharts.
func findChart(dir, name string) (string, error) {
	const maxDepth = 3
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		depth := 0
		if rel != "." {
			depth = strings.Count(rel, string(filepath.Separator)) + 1
		}
		if d.IsDir() {
			if depth > maxDepth || (d.Name() == "charts" && depth > 0) || (strings.HasPrefix(d.Name(), ".") && depth > 0) {
				return filepath.SkipDir
			}
			if chartName(filepath.Join(path, "Chart.yaml")) == name {
				found = append(found, path)
			}
			return nil
		}
		if depth == 1 && strings.HasPrefix(d.Name(), name+"-") && strings.HasSuffix(d.Name(), ".tgz") {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("look for chart %s in %s: %w", name, dir, err)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%w: no Chart.yaml named %s in %s", ErrNotFound, name, dir)
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
