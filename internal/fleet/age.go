package fleet

import (
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
)

// checkAgeRecipient parses an environment's age recipient with the age
// library, so that a mistyped key (a wrong character, a bad checksum, a
// truncated copy) is refused here, at its line, and not when `secret
// encrypt` or Flux's decryption first needs it.
//
// Accepted are the recipients sops encrypts to (gpufleet runs the sops program) and
// that a Flux cluster can decrypt with a key file: X25519 (age1...) and
// hybrid post-quantum (age1pq1...). Plugin recipients (age1yubikey1... and
// the like) and SSH keys are refused: the cluster's private key must be a
// plain age identity in the flux-system sops-age Secret, which a hardware
// token or an SSH agent cannot be.
func checkAgeRecipient(r string) error {
	switch {
	case r == "":
		return errors.New("the age recipient is empty: use the public key of the environment's age identity (age1...)")
	case strings.TrimSpace(r) != r:
		return fmt.Errorf("%q has spaces around the key: remove them", r)
	case strings.HasPrefix(r, "ssh-"):
		return fmt.Errorf("%q is an SSH key: use an age recipient (age1...), whose identity Flux holds in the sops-age Secret", r)
	case strings.HasPrefix(r, "age1pq1"):
		if _, err := age.ParseHybridRecipient(r); err != nil {
			return fmt.Errorf("not an age recipient: %w", err)
		}
		return nil
	case strings.HasPrefix(r, "age1") && strings.LastIndex(r, "1") >= len("age1"):
		// A plugin recipient is age1<name>1<data>; a plain X25519 one has
		// no 1 after its prefix, since 1 is not a bech32 data character.
		return fmt.Errorf("%q is an age plugin recipient: use a plain age recipient (age1...), whose identity Flux can hold in the sops-age Secret", r)
	case strings.HasPrefix(r, "age1"):
		if _, err := age.ParseX25519Recipient(r); err != nil {
			return fmt.Errorf("not an age recipient: %w", err)
		}
		return nil
	default:
		return fmt.Errorf("%q is not an age recipient (age1...)", r)
	}
}
