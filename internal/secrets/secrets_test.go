package secrets

import (
	"strings"
	"testing"
	"time"

	"filippo.io/age"
)

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	staging, prod := newIdentity(t), newIdentity(t)
	secret := NewSecret("litellm-master-key", "llm-gateway", map[string]string{"master-key": "sk-very-secret-value"})
	enc, err := EncryptSecret(secret, []string{staging.Recipient().String()}, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	text := string(enc)
	if strings.Contains(text, "sk-very-secret-value") {
		t.Fatalf("the plaintext value is in the encrypted file:\n%s", text)
	}
	for _, want := range []string{"name: litellm-master-key", "master-key: ENC[AES256_GCM,", "encrypted_regex: ^(data|stringData)$", staging.Recipient().String()} {
		if !strings.Contains(text, want) {
			t.Errorf("encrypted file lacks %q:\n%s", want, text)
		}
	}

	plain, err := Decrypt(enc, []age.Identity{staging})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain), "master-key: sk-very-secret-value") {
		t.Errorf("decrypted:\n%s", plain)
	}
	if _, err := Decrypt(enc, []age.Identity{prod}); err == nil || !strings.Contains(err.Error(), "no age identity given opens this file") {
		t.Errorf("another environment's key must not open it, got %v", err)
	}

	// A value changed in Git after encryption fails the MAC check.
	tampered := strings.Replace(text, "name: litellm-master-key", "name: litellm-master-kez", 1)
	if _, err := Decrypt([]byte(tampered), []age.Identity{staging}); err == nil || !strings.Contains(err.Error(), "MAC mismatch") {
		t.Errorf("a tampered file must be refused, got %v", err)
	}
}

func TestRecipients(t *testing.T) {
	a, b := newIdentity(t), newIdentity(t)
	enc, err := Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  k: v\n"), []string{a.Recipient().String(), b.Recipient().String()}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Recipients(enc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != a.Recipient().String() || got[1] != b.Recipient().String() {
		t.Errorf("recipients %v", got)
	}
	for _, id := range []age.Identity{a, b} {
		if _, err := Decrypt(enc, []age.Identity{id}); err != nil {
			t.Errorf("each recipient opens the file: %v", err)
		}
	}
}
