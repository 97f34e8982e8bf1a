package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// GitServer is a real git server speaking smart HTTP on loopback, the kind
// Flux's source-controller clones from.
type GitServer struct {
	srv *gittestserver.GitServer
}

// StartGitServer starts a git server whose repositories live in a new
// temporary folder, removed by Stop.
func StartGitServer() (*GitServer, error) {
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		return nil, fmt.Errorf("git server: %w", err)
	}
	if err := srv.StartHTTP(); err != nil {
		os.RemoveAll(srv.Root())
		return nil, fmt.Errorf("git server: %w", err)
	}
	return &GitServer{srv: srv}, nil
}

// URL returns the clone URL of the repository at path (e.g. "fleet.git").
func (g *GitServer) URL(path string) string {
	return g.srv.HTTPAddress() + "/" + strings.TrimPrefix(path, "/")
}

// Stop stops the server and removes its repositories.
func (g *GitServer) Stop() error {
	g.srv.StopHTTP()
	if err := os.RemoveAll(g.srv.Root()); err != nil {
		return fmt.Errorf("git server: %w", err)
	}
	return nil
}

// GitRepo is a working copy whose commits are pushed to a repository of the
// git server.
type GitRepo struct {
	// URL is the repository's clone URL on the server.
	URL string
	// Branch is the branch commits go to.
	Branch string

	dir  string
	repo *gogit.Repository
}

// NewRepo creates an empty bare repository path (e.g. "fleet.git") on the
// server whose default branch is branch ("main" when empty), and a working
// copy of it in workDir, which must be an empty or missing folder.
func (g *GitServer) NewRepo(path, branch, workDir string) (*GitRepo, error) {
	if branch == "" {
		branch = "main"
	}
	ref := plumbing.NewBranchReferenceName(branch)
	bare := filepath.Join(g.srv.Root(), filepath.FromSlash(strings.TrimPrefix(path, "/")))
	if _, err := gogit.PlainInitWithOptions(bare, &gogit.PlainInitOptions{
		InitOptions: gogit.InitOptions{DefaultBranch: ref}, Bare: true,
	}); err != nil {
		return nil, fmt.Errorf("git: create %s: %w", path, err)
	}
	repo, err := gogit.PlainInitWithOptions(workDir, &gogit.PlainInitOptions{
		InitOptions: gogit.InitOptions{DefaultBranch: ref},
	})
	if err != nil {
		return nil, fmt.Errorf("git: working copy of %s: %w", path, err)
	}
	url := g.URL(path)
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("git: working copy of %s: %w", path, err)
	}
	return &GitRepo{URL: url, Branch: branch, dir: workDir, repo: repo}, nil
}

// CommitDir makes the repository's tree equal to the folder src (files
// absent from src are removed), commits with message, pushes, and returns
// the commit's hash. Flux reports it as "<branch>@sha1:<hash>".
func (r *GitRepo) CommitDir(src, message string) (string, error) {
	if err := r.clearWorktree(); err != nil {
		return "", err
	}
	if err := copyTree(src, r.dir); err != nil {
		return "", fmt.Errorf("git: commit %s: %w", src, err)
	}
	return r.commitAndPush(message)
}

// CommitFiles is CommitDir for a tree given as slash-separated paths and
// contents.
func (r *GitRepo) CommitFiles(files map[string]string, message string) (string, error) {
	if err := r.clearWorktree(); err != nil {
		return "", err
	}
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("git: %w", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("git: %w", err)
		}
	}
	return r.commitAndPush(message)
}

// Revision returns the revision string Flux reports for hash on r's branch.
func (r *GitRepo) Revision(hash string) string { return r.Branch + "@sha1:" + hash }

func (r *GitRepo) commitAndPush(message string) (string, error) {
	wt, err := r.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("git: %w", err)
	}
	// All stages deletions too, like "git add -A".
	if err := wt.AddWithOptions(&gogit.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("git: add: %w", err)
	}
	sig := &object.Signature{Name: "gpufleet testbed", Email: "testbed@gpufleet.invalid", When: time.Now()}
	hash, err := wt.Commit(message, &gogit.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		return "", fmt.Errorf("git: commit: %w", err)
	}
	spec := config.RefSpec(fmt.Sprintf("refs/heads/%s:refs/heads/%s", r.Branch, r.Branch))
	if err := r.repo.Push(&gogit.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}}); err != nil &&
		!errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return "", fmt.Errorf("git: push: %w", err)
	}
	return hash.String(), nil
}

// clearWorktree removes everything but .git from the working copy.
func (r *GitRepo) clearWorktree() error {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("git: %w", err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
			return fmt.Errorf("git: %w", err)
		}
	}
	return nil
}

// copyTree copies the regular files under src into dst, skipping .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
