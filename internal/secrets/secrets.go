package secrets

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// sopsVersion is the SOPS format version written into files: the library
// version in go.mod (its version package drags in a CLI framework).
const sopsVersion = "3.13.3"

// EncryptedRegex is what SOPS encrypts in a Secret: its values, not its
// names (the same rule render writes into .sops.yaml).
const EncryptedRegex = "^(data|stringData)$"

// NewSecret builds an Opaque Secret holding data as stringData.
func NewSecret(name, namespace string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		StringData: data,
	}
}

// EncryptSecret marshals s and encrypts it to the age recipients.
func EncryptSecret(s *corev1.Secret, recipients []string, now time.Time) ([]byte, error) {
	plain, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	return Encrypt(plain, recipients, now)
}

// Encrypt encrypts the data and stringData of a YAML document to the age
// recipients, returning the SOPS file. now stamps the file (and its MAC).
func Encrypt(plain []byte, recipients []string, now time.Time) ([]byte, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no age recipients: set [stack.age-recipients] in the fleet file")
	}
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %q: %w", r, err)
		}
		group = append(group, mk)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	for _, k := range group {
		if err := k.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("encrypt data key: %w", err)
		}
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:      []sops.KeyGroup{group},
			EncryptedRegex: EncryptedRegex,
			Version:        sopsVersion,
		},
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	tree.Metadata.LastModified = now.UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("encrypt MAC: %w", err)
	}
	return store.EmitEncryptedFile(tree)
}

// Decrypt opens a SOPS file with one of the age identities and checks its
// MAC, so a file tampered with in Git is refused.
func Decrypt(encrypted []byte, identities []age.Identity) ([]byte, error) {
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	tree, err := store.LoadEncryptedFile(encrypted)
	if err != nil {
		return nil, fmt.Errorf("read SOPS file: %w", err)
	}
	dataKey, err := dataKeyFor(tree.Metadata, identities)
	if err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("decrypt MAC: %w", err)
	}
	if want != mac {
		return nil, errors.New("MAC mismatch: the file was changed after it was encrypted")
	}
	return store.EmitPlainFile(tree.Branches)
}

// Recipients lists the age recipients a SOPS file is encrypted to.
func Recipients(encrypted []byte) ([]string, error) {
	tree, err := sopsyaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(encrypted)
	if err != nil {
		return nil, fmt.Errorf("read SOPS file: %w", err)
	}
	var out []string
	for _, group := range tree.Metadata.KeyGroups {
		for _, k := range group {
			if mk, ok := k.(*sopsage.MasterKey); ok {
				out = append(out, mk.Recipient)
			}
		}
	}
	return out, nil
}

// dataKeyFor unwraps the data key from the first age stanza one of the
// identities opens. It does this itself rather than through SOPS's key
// service, which would read identities from the environment instead.
func dataKeyFor(m sops.Metadata, identities []age.Identity) ([]byte, error) {
	var tried int
	for _, group := range m.KeyGroups {
		for _, k := range group {
			mk, ok := k.(*sopsage.MasterKey)
			if !ok {
				continue
			}
			tried++
			r, err := age.Decrypt(armor.NewReader(strings.NewReader(mk.EncryptedKey)), identities...)
			if err != nil {
				continue
			}
			return io.ReadAll(r)
		}
	}
	if tried == 0 {
		return nil, errors.New("the file has no age key")
	}
	return nil, errors.New("no age identity given opens this file: set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY to the environment's private key")
}

var _ keys.MasterKey = (*sopsage.MasterKey)(nil)

// IdentitiesFromEnv reads age identities the way SOPS and Flux take them:
// SOPS_AGE_KEY (the keys themselves) or SOPS_AGE_KEY_FILE (a file of keys).
func IdentitiesFromEnv() ([]age.Identity, error) {
	var text string
	switch {
	case os.Getenv("SOPS_AGE_KEY") != "":
		text = os.Getenv("SOPS_AGE_KEY")
	case os.Getenv("SOPS_AGE_KEY_FILE") != "":
		b, err := os.ReadFile(os.Getenv("SOPS_AGE_KEY_FILE"))
		if err != nil {
			return nil, fmt.Errorf("read SOPS_AGE_KEY_FILE: %w", err)
		}
		text = string(b)
	default:
		return nil, errors.New("no age identity: set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY")
	}
	ids, err := age.ParseIdentities(bytes.NewBufferString(text))
	if err != nil {
		return nil, fmt.Errorf("parse age identities: %w", err)
	}
	return ids, nil
}
