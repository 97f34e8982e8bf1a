package secrets

import (
	"context"
	"errors"
	"os"
)

// Identities are the age private keys sops may open a file with. They reach
// sops only through the environment of its process, under the names sops
// and Flux read, and never through a file gpufleet writes.
type Identities struct {
	// Keys are the keys themselves, one per line (SOPS_AGE_KEY).
	Keys string
	// KeyFile is a file of keys that sops reads itself (SOPS_AGE_KEY_FILE).
	KeyFile string
}

// IdentitiesFromEnv takes the identities from SOPS_AGE_KEY and
// SOPS_AGE_KEY_FILE, the way SOPS and Flux take them; it fails when both
// are empty.
func IdentitiesFromEnv() (Identities, error) {
	ids := Identities{Keys: os.Getenv("SOPS_AGE_KEY"), KeyFile: os.Getenv("SOPS_AGE_KEY_FILE")}
	if ids.Keys == "" && ids.KeyFile == "" {
		return Identities{}, errors.New("no age identity: set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY")
	}
	return ids, nil
}

func (ids Identities) env() []string {
	var env []string
	if ids.Keys != "" {
		env = append(env, "SOPS_AGE_KEY="+ids.Keys)
	}
	if ids.KeyFile != "" {
		env = append(env, "SOPS_AGE_KEY_FILE="+ids.KeyFile)
	}
	return env
}

// Decrypt opens a SOPS file with the identities and returns the plaintext
// YAML. sops checks the file's MAC, so a file changed in Git after it was
// encrypted is refused (an [*Error] whose Hint says so). Besides ids, sops
// also tries the key files it finds by itself (its keys.txt in the user's
// configuration folder, ~/.ssh/id_ed25519 and id_rsa), as it would when run
// by hand.
func (s *SOPS) Decrypt(ctx context.Context, encrypted []byte, ids Identities) ([]byte, error) {
	return s.run(ctx, encrypted, ids.env(),
		"decrypt",
		"--input-type", "yaml", "--output-type", "yaml",
	)
}
