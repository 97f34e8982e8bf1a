package secrets_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/gpufleet/gpufleet/internal/secrets"
	"github.com/gpufleet/gpufleet/internal/secrets/sopstest"
)

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func testSOPS(t *testing.T) *secrets.SOPS {
	t.Helper()
	s, err := secrets.Find(sopstest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysOf(ids ...*age.X25519Identity) secrets.Identities {
	var lines []string
	for _, id := range ids {
		lines = append(lines, id.String())
	}
	return secrets.Identities{Keys: strings.Join(lines, "\n")}
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	staging, prod := newIdentity(t), newIdentity(t)
	secret := secrets.NewSecret("litellm-master-key", "llm-gateway", map[string]string{"master-key": "sk-very-secret-value"})
	enc, err := s.EncryptSecret(ctx, secret, []string{staging.Recipient().String()})
	if err != nil {
		t.Fatal(err)
	}
	text := string(enc)
	if strings.Contains(text, "sk-very-secret-value") {
		t.Fatalf("the plaintext value is in the encrypted file:\n%s", text)
	}
	for _, want := range []string{"name: litellm-master-key", "master-key: ENC[AES256_GCM,", "encrypted_regex: ^(data|stringData)$", staging.Recipient().String(), "version: 3.13.3"} {
		if !strings.Contains(text, want) {
			t.Errorf("encrypted file lacks %q:\n%s", want, text)
		}
	}

	plain, err := s.Decrypt(ctx, enc, keysOf(staging))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain), "master-key: sk-very-secret-value") || !strings.Contains(string(plain), "name: litellm-master-key") || strings.Contains(string(plain), "sops:") {
		t.Errorf("decrypted:\n%s", plain)
	}
	var serr *secrets.Error
	if _, err := s.Decrypt(ctx, enc, keysOf(prod)); !errors.As(err, &serr) || !strings.Contains(err.Error(), "no age identity given opens this file") || serr.Stderr == "" {
		t.Errorf("another environment's key must not open it, and sops's own words must be passed on, got %v", err)
	}

	// A value changed in Git after encryption fails the MAC check.
	tampered := strings.Replace(text, "name: litellm-master-key", "name: litellm-master-kez", 1)
	if _, err := s.Decrypt(ctx, []byte(tampered), keysOf(staging)); err == nil || !strings.Contains(err.Error(), "MAC mismatch") {
		t.Errorf("a tampered file must be refused, got %v", err)
	}
}

// TestRealSOPSDecrypts runs sops by hand on a file gpufleet wrote, the way
// a user (or kustomize-controller, which runs SOPS's decryption with the
// cluster's key) opens it: "sops decrypt FILE" with the key in a file.
func TestRealSOPSDecrypts(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	id := newIdentity(t)
	enc, err := s.EncryptSecret(ctx, secrets.NewSecret("hf-token", "vllm", map[string]string{"token": "hf_abc123"}), []string{id.Recipient().String()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "secret-hf-token.sops.yaml")
	keyFile := filepath.Join(dir, "age.agekey")
	if err := os.WriteFile(file, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.Path, "decrypt", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SOPS_AGE_KEY_FILE="+keyFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sops decrypt: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "token: hf_abc123") {
		t.Errorf("sops decrypt:\n%s", out)
	}
}

func TestRecipients(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	a, b := newIdentity(t), newIdentity(t)
	want := []string{a.Recipient().String(), b.Recipient().String()}
	enc, err := s.Encrypt(ctx, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  k: v\n"), want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := secrets.Recipients(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("recipients %v, want %v", got, want)
	}
	for _, id := range []*age.X25519Identity{a, b} {
		if _, err := s.Decrypt(ctx, enc, keysOf(id)); err != nil {
			t.Errorf("each recipient opens the file: %v", err)
		}
	}
	if _, err := secrets.Recipients([]byte("apiVersion: v1\nkind: Secret\nstringData:\n  k: v\n")); err == nil || !strings.Contains(err.Error(), "not a SOPS file") {
		t.Errorf("a plaintext file has no recipients, got %v", err)
	}
}

// TestEncryptRefusesBadRecipient: sops splits --age at commas, so a
// recipient must be checked as one key before it is passed.
func TestEncryptRefusesBadRecipient(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	a, b := newIdentity(t), newIdentity(t)
	joined := a.Recipient().String() + "," + b.Recipient().String()
	if _, err := s.Encrypt(ctx, []byte("stringData:\n  k: v\n"), []string{joined}); err == nil || !strings.Contains(err.Error(), "age recipient") {
		t.Errorf("two keys in one recipient must be refused, got %v", err)
	}
}

// TestEncryptIgnoresUserSOPSSettings: the user's SOPS_ variables and a
// .sops.yaml in the working folder must not change what gpufleet writes.
func TestEncryptIgnoresUserSOPSSettings(t *testing.T) {
	s, ctx := testSOPS(t), context.Background()
	mine, other := newIdentity(t), newIdentity(t)
	dir := t.TempDir()
	conf := "creation_rules:\n  - path_regex: nothing-matches-this$\n    age: " + other.Recipient().String() + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".sops.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("SOPS_AGE_RECIPIENTS", other.Recipient().String())
	t.Setenv("SOPS_PGP_FP", "FBC7B9E2A4F9289AC0C1D4843D16CEE4A27381B4")
	enc, err := s.Encrypt(ctx, []byte("stringData:\n  k: v\n"), []string{mine.Recipient().String()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := secrets.Recipients(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{mine.Recipient().String()}) || strings.Contains(string(enc), "pgp") {
		t.Errorf("encrypted to %v (want only %s):\n%s", got, mine.Recipient(), enc)
	}
}

func TestFindMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(secrets.EnvSOPS, "")
	for _, flag := range []string{"", filepath.Join(t.TempDir(), "sops")} {
		_, err := secrets.Find(flag)
		if !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "install sops") {
			t.Errorf("Find(%q): want ErrNotFound with how to install sops, got %v", flag, err)
		}
	}
	t.Setenv(secrets.EnvSOPS, "/nonexistent/sops")
	if _, err := secrets.Find(""); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), secrets.EnvSOPS+"=/nonexistent/sops") {
		t.Errorf("a %s that names no program: got %v", secrets.EnvSOPS, err)
	}
}
