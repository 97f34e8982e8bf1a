package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

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
func (s *SOPS) EncryptSecret(ctx context.Context, secret *corev1.Secret, recipients []string) ([]byte, error) {
	plain, err := yaml.Marshal(secret)
	if err != nil {
		return nil, err
	}
	return s.Encrypt(ctx, plain, recipients)
}

// Encrypt encrypts the data and stringData of a YAML document to the age
// recipients and returns the SOPS file, as
//
//	sops encrypt --age R1,R2 --encrypted-regex '^(data|stringData)$' ...
//
// writes it (sops stamps it with the time and a MAC). The plaintext reaches
// sops on its standard input and the file comes back on its standard
// output: neither is written anywhere else.
func (s *SOPS) Encrypt(ctx context.Context, plain []byte, recipients []string) ([]byte, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no age recipients: set [stack.age-recipients] in the fleet file")
	}
	for _, r := range recipients {
		if err := checkRecipient(r); err != nil {
			return nil, err
		}
	}
	return s.run(ctx, plain, nil,
		"encrypt",
		"--input-type", "yaml", "--output-type", "yaml",
		// Required with standard input; with the types and the config
		// given, sops reads nothing from this name.
		"--filename-override", "secret.yaml",
		"--age", strings.Join(recipients, ","),
		"--encrypted-regex", EncryptedRegex,
	)
}

// checkRecipient parses r with the age library before it goes to sops: sops
// splits its --age list at commas, so a recipient must be one well-formed
// key, and a bad one is named here rather than in sops's words.
func checkRecipient(r string) error {
	var err error
	if strings.HasPrefix(r, "age1pq1") {
		_, err = age.ParseHybridRecipient(r)
	} else {
		_, err = age.ParseX25519Recipient(r)
	}
	if err != nil {
		return fmt.Errorf("age recipient %q: %w", r, err)
	}
	return nil
}
