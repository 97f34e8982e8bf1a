package testbed

import (
	"errors"
	"fmt"
	"io"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit is one commit of a branch on the git server, read back through git
// (not through what a controller reports about it).
type Commit struct {
	// Hash and Parents are hex commit hashes.
	Hash    string
	Parents []string
	// Message is the full commit message; Author "Name <email>".
	Message, Author string
	// Files maps each file's slash-separated path to its content.
	Files map[string]string
}

// ReadBranch fetches branch from the server and returns its head commit with
// the whole tree. It returns an error wrapping [plumbing.ErrReferenceNotFound]
// when the branch does not exist (yet).
func (r *GitRepo) ReadBranch(branch string) (*Commit, error) {
	remoteRef := plumbing.NewRemoteReferenceName("origin", branch)
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", branch, remoteRef))
	err := r.repo.Fetch(&gogit.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Force: true})
	switch {
	case err == nil, errors.Is(err, gogit.NoErrAlreadyUpToDate):
	case errors.Is(err, gogit.NoMatchingRefSpecError{}):
		return nil, fmt.Errorf("git: branch %s: %w", branch, plumbing.ErrReferenceNotFound)
	default:
		return nil, fmt.Errorf("git: fetch %s: %w", branch, err)
	}
	ref, err := r.repo.Reference(remoteRef, true)
	if err != nil {
		return nil, fmt.Errorf("git: branch %s: %w", branch, err)
	}
	return r.readCommit(ref.Hash())
}

// Parent returns the commit c.Parents[0] with its tree.
func (r *GitRepo) Parent(c *Commit) (*Commit, error) {
	if len(c.Parents) == 0 {
		return nil, fmt.Errorf("git: commit %s has no parent", c.Hash)
	}
	return r.readCommit(plumbing.NewHash(c.Parents[0]))
}

func (r *GitRepo) readCommit(h plumbing.Hash) (*Commit, error) {
	co, err := r.repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("git: commit %s: %w", h, err)
	}
	c := &Commit{Hash: co.Hash.String(), Message: co.Message, Author: co.Author.Name + " <" + co.Author.Email + ">", Files: map[string]string{}}
	for _, p := range co.ParentHashes {
		c.Parents = append(c.Parents, p.String())
	}
	files, err := co.Files()
	if err != nil {
		return nil, fmt.Errorf("git: commit %s: %w", h, err)
	}
	err = files.ForEach(func(f *object.File) error {
		rd, err := f.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		b, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		c.Files[f.Name] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("git: commit %s: %w", h, err)
	}
	return c, nil
}
