package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoMemoryDir is wrapped by the error [MemoryDir] returns when it finds
// no memory-backed folder.
var ErrNoMemoryDir = errors.New("no memory-backed folder for the editor's plaintext copy")

// EditOptions are the inputs of [SOPS.Edit].
type EditOptions struct {
	// Identities open the file.
	Identities Identities
	// Name names the plaintext copy (its base name, with .yaml), so that
	// the editor shows which Secret it is and highlights YAML.
	Name string
	// Edit changes the plaintext file at path in place; the command runs
	// $EDITOR on it. An error leaves the encrypted file as it was.
	Edit func(ctx context.Context, path string) error
	// Dir is the memory-backed folder for the copy; empty means the one
	// [MemoryDir] finds.
	Dir string
}

// EditResult is what an edit produced.
type EditResult struct {
	// Encrypted is the new SOPS file, nil when the plaintext is unchanged.
	Encrypted []byte
	// Recipients are the age recipients the file was, and is again,
	// encrypted to.
	Recipients []string
}

// Edit decrypts a SOPS file, lets o.Edit change the plaintext, and encrypts
// the result to the recipients the file had.
//
// What is written where: an editor needs a file, so the plaintext exists as
// one file, mode 0600, in a fresh 0700 folder on a memory-backed file
// system (tmpfs: $XDG_RUNTIME_DIR or /dev/shm, see [MemoryDir]), for as
// long as the editor runs; the folder is removed before Edit returns,
// whatever happens. Backup and swap files an editor keeps beside the file
// stay in that folder and go with it; an editor configured to keep them
// elsewhere is beyond gpufleet's reach. Nothing else is written: the
// plaintext goes from sops's standard output into memory and back to
// sops's standard input, and the keys reach sops through its environment.
// A tmpfs may be swapped out under memory pressure, as any process memory
// may. Where no memory-backed folder is found Edit refuses to run rather
// than put the plaintext on a disk.
func (s *SOPS) Edit(ctx context.Context, encrypted []byte, o EditOptions) (EditResult, error) {
	recipients, err := Recipients(encrypted)
	if err != nil {
		return EditResult{}, err
	}
	plain, err := s.Decrypt(ctx, encrypted, o.Identities)
	if err != nil {
		return EditResult{}, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = MemoryDir(); err != nil {
			return EditResult{}, err
		}
	}
	edited, err := editCopy(ctx, dir, o.Name, plain, o.Edit)
	if err != nil {
		return EditResult{}, err
	}
	res := EditResult{Recipients: recipients}
	if bytes.Equal(edited, plain) {
		return res, nil
	}
	if res.Encrypted, err = s.Encrypt(ctx, edited, recipients); err != nil {
		return EditResult{}, err
	}
	return res, nil
}

// editCopy writes plain to a private folder under dir, runs edit on it and
// returns what the file holds afterwards; the folder is gone when it
// returns.
func editCopy(ctx context.Context, dir, name string, plain []byte, edit func(context.Context, string) error) (edited []byte, err error) {
	priv, err := os.MkdirTemp(dir, "gpufleet-secret-")
	if err != nil {
		return nil, fmt.Errorf("private folder for the plaintext: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(priv); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove the plaintext copy in %s: %w", priv, rmErr))
		}
	}()
	if name == "" {
		name = "secret"
	}
	path := filepath.Join(priv, filepath.Base(name)+".yaml")
	if err := os.WriteFile(path, plain, 0o600); err != nil {
		return nil, err
	}
	if err := edit(ctx, path); err != nil {
		return nil, fmt.Errorf("editor: %w (the file was not changed)", err)
	}
	return os.ReadFile(path)
}
