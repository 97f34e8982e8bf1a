package verify

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// repo is the fleet repository as verify reads it: the work tree holding
// the fleet file, and git for the base and the commits since.
type repo struct {
	// dir holds the fleet file; prefix is dir relative to the repository
	// root ("" or "fleet/"), so that findings name paths from the root as
	// CI systems want them; top is the root.
	dir, prefix, top string
}

func openRepo(fleetFile string) (*repo, error) {
	dir := filepath.Dir(fleetFile)
	prefix, err := gitOut(dir, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git repository: verify compares its base revision with the work tree (%w)", dir, err)
	}
	top, err := gitOut(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	return &repo{dir: dir, prefix: strings.TrimSpace(prefix), top: strings.TrimSpace(top)}, nil
}

// path is the repository path of rel, a path relative to dir.
func (r *repo) path(rel string) string { return r.prefix + filepath.ToSlash(rel) }

// resolve turns a revision into its commit.
func (r *repo) resolve(rev string) (string, error) {
	out, err := gitOut(r.dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("base revision %q is not a commit of the repository (a shallow clone? fetch the full history): %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// show reads path (relative to the repository root) at commit; ok is
// false when the file did not exist there.
func (r *repo) show(commit, path string) (data []byte, ok bool, err error) {
	if _, err := gitOut(r.dir, "cat-file", "-e", commit+":"+path); err != nil {
		return nil, false, nil
	}
	out, err := gitOut(r.dir, "show", commit+":"+path)
	if err != nil {
		return nil, false, err
	}
	return []byte(out), true, nil
}

// commit is one commit of the change, as a promotion command writes it.
type commit struct {
	hash, subject string
	// skipped is the commit's "Gate SKIPPED for …" line, when it has one.
	skipped string
}

// commitPrefix starts the subject of every commit a promotion command
// makes (promote.Apply's message).
const commitPrefix = "gpufleet: "

// skipPrefix starts the line promote.Apply writes for a step taken with
// --skip-gate: "Gate SKIPPED for CLUSTERS. Reason: REASON".
const skipPrefix = "Gate SKIPPED for "

// commits lists the commits from base to HEAD, oldest first.
func (r *repo) commits(base string) ([]commit, error) {
	out, err := gitOut(r.dir, "log", "--reverse", "--format=%H%x00%B%x1e", base+"..HEAD")
	if err != nil {
		return nil, err
	}
	var list []commit
	for rec := range strings.SplitSeq(out, "\x1e") {
		hash, body, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
		if !ok {
			continue
		}
		lines := strings.Split(strings.TrimSpace(body), "\n")
		c := commit{hash: hash, subject: strings.TrimSpace(lines[0])}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, skipPrefix) {
				c.skipped = strings.TrimSpace(l)
			}
		}
		list = append(list, c)
	}
	return list, nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// extract writes the files under path (relative to the repository root)
// at commit into dst, as they are there: regular files and symbolic links
// (a chart's links are judged where the chart is loaded). It is how verify
// reads what the base names beside its fleet file (its chart folder)
// without touching the work tree.
func (r *repo) extract(commit, path, dst string) error {
	cmd := exec.Command("git", "-C", r.top, "archive", "--format=tar", commit, "--", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git archive %s -- %s: %w: %s", short(commit), path, err, strings.TrimSpace(stderr.String()))
	}
	return untar(&stdout, dst)
}
