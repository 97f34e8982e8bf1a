package charts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/gpufleet/gpufleet/internal/fsutil"
)

// A chart folder in the fleet repository is input from whoever changes the
// repository, and a template prints whatever file of its chart it likes
// (.Files.Get, then fail, or into a rendered object). Helm's loader follows
// symbolic links out of a chart folder (it only logs them), so a link
// committed as files/leak -> ../../secret would put any file the job can
// read into render's output. gpufleet checks every link first; the rest is
// Helm's: an archive's entries never leave it (Helm refuses absolute and
// ../ names, reads a link entry as an empty file and caps sizes), and a
// chart folder's device files and oversized files are refused when loaded.

// confine checks that path, symbolic links resolved, is inside root; no
// root means no limit. A missing path is returned as it is (errors.Is
// fs.ErrNotExist), for the caller to treat as absent.
func confine(root, path string) error {
	if root == "" {
		return nil
	}
	if _, err := fsutil.ResolveWithin(root, path); err != nil {
		if errors.Is(err, fsutil.ErrOutside) {
			return fmt.Errorf("chart source: %s is, or goes through, a symbolic link out of the fleet repository %s: refused, nothing outside the repository is read (%w)", path, root, fsutil.ErrOutside)
		}
		return err
	}
	return nil
}

// ErrLinkOut is wrapped by the error of a chart folder holding a symbolic
// link that leaves it.
var ErrLinkOut = errors.New("symbolic link out of the chart's folder")

// loadChart loads the chart folder or archive at path, which must be inside
// root when root is set.
func loadChart(path, root string) (*chart.Chart, error) {
	if err := confine(root, path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return loader.LoadFile(path)
	}
	return loadChartDir(path)
}

// loadChartDir loads a chart folder with Helm's loader once every symbolic
// link in it is known to stay in it: the chart's folder, links resolved, is
// where each of its files must really be. A link to a folder that holds it
// is refused too, as Helm's walk would follow it forever.
func loadChartDir(dir string) (*chart.Chart, error) {
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		resolved, err := fsutil.ResolveWithin(top, p)
		switch {
		case errors.Is(err, fsutil.ErrOutside):
			return fmt.Errorf("%s: %w: refused, a chart's files are read from its own folder only (copy the file into the chart instead of linking it)", filepath.ToSlash(rel), ErrLinkOut)
		case err != nil:
			return fmt.Errorf("%s: %w", filepath.ToSlash(rel), err)
		}
		if fi, err := os.Stat(resolved); err == nil && fi.IsDir() && fsutil.Within(resolved, filepath.Dir(p)) {
			return fmt.Errorf("%s: symbolic link to a folder that holds it: refused, it makes a loop", filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadDir(top)
}
