package secrets_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gpufleet/gpufleet/internal/secrets"
)

// TestEditKeepsRecipientsAndDisk edits a file encrypted to two recipients
// with one of their keys: the result is encrypted to both again, the
// editor's copy lived on a tmpfs, and it is gone afterwards.
func TestEditKeepsRecipientsAndDisk(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	staging, prod := newIdentity(t), newIdentity(t)
	recipients := []string{staging.Recipient().String(), prod.Recipient().String()}
	enc, err := s.EncryptSecret(ctx, secrets.NewSecret("webhook-token", "flux-system", map[string]string{"token": "old-token"}), recipients)
	if err != nil {
		t.Fatal(err)
	}
	var copyPath string
	res, err := s.Edit(ctx, enc, secrets.EditOptions{
		Identities: keysOf(staging),
		Name:       "secret-webhook-token",
		Edit: func(_ context.Context, path string) error {
			copyPath = path
			var st syscall.Statfs_t
			if err := syscall.Statfs(path, &st); err != nil {
				return err
			}
			if uint32(st.Type) != 0x01021994 {
				t.Errorf("the plaintext copy %s is not on a tmpfs (statfs type %#x)", path, st.Type)
			}
			if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("the plaintext copy must be private (0600): %v %v", info.Mode(), err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), "token: old-token") {
				t.Errorf("the editor sees the plaintext:\n%s", b)
			}
			return os.WriteFile(path, []byte(strings.Replace(string(b), "old-token", "new-token", 1)), 0o600)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(copyPath, "/secret-webhook-token.yaml") {
		t.Errorf("the copy is named %s", copyPath)
	}
	if _, err := os.Stat(copyPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plaintext copy %s is still there: %v", copyPath, err)
	}
	if !slices.Equal(res.Recipients, recipients) || res.Encrypted == nil {
		t.Fatalf("edit result: recipients %v, changed %t", res.Recipients, res.Encrypted != nil)
	}
	if got, err := secrets.Recipients(res.Encrypted); err != nil || !slices.Equal(got, recipients) {
		t.Errorf("the edited file is encrypted to %v (%v), want %v", got, err, recipients)
	}
	if strings.Contains(string(res.Encrypted), "new-token") {
		t.Errorf("plaintext in the edited file:\n%s", res.Encrypted)
	}
	plain, err := s.Decrypt(ctx, res.Encrypted, keysOf(prod))
	if err != nil || !strings.Contains(string(plain), "token: new-token") {
		t.Errorf("the other recipient opens the edit: %v\n%s", err, plain)
	}

	// Unchanged: nothing to write. A failing editor: an error, nothing to write.
	res, err = s.Edit(ctx, enc, secrets.EditOptions{Identities: keysOf(prod), Edit: func(context.Context, string) error { return nil }})
	if err != nil || res.Encrypted != nil {
		t.Errorf("an unchanged edit: %v, changed %t", err, res.Encrypted != nil)
	}
	_, err = s.Edit(ctx, enc, secrets.EditOptions{Identities: keysOf(prod), Edit: func(context.Context, string) error { return errors.New("exit status 1") }})
	if err == nil || !strings.Contains(err.Error(), "the file was not changed") {
		t.Errorf("a failing editor: %v", err)
	}
}
