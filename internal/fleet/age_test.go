package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgeRecipientParsedByAgeLibrary: an environment's age recipient is
// parsed with the age library, so a bad checksum, a character outside
// bech32 or a truncated key is refused at its line, not when a secret is
// first encrypted; keys a Flux cluster cannot hold are refused too.
func TestAgeRecipientParsedByAgeLibrary(t *testing.T) {
	const good = "age1xx39zja30hlq5pdy3hamnjpk8dsh2c6yu44h0gdfm669g3tffqxsdu683a"
	base := mustRead(t, "testdata/minimal.toml")
	recipientProblems := func(t *testing.T, staging string) []string {
		t.Helper()
		src := base + "\n[stack]\n[stack.age-recipients]\nstaging = \"" + staging + "\"\n"
		var got []string
		for _, p := range problemStrings(t, src) {
			if strings.Contains(p, "stack.age-recipients") {
				got = append(got, p)
			}
		}
		return got
	}
	if got := recipientProblems(t, good); len(got) != 0 {
		t.Errorf("a valid recipient was refused: %q", got)
	}
	tests := []struct {
		name, recipient string
		want            []string
	}{
		{"bad checksum", good[:len(good)-1] + "q", []string{
			`f.toml:55:1: stack.age-recipients.staging: not an age recipient: malformed recipient "` + good[:len(good)-1] + `q": invalid checksum`,
		}},
		{"truncated", good[:40], []string{
			`f.toml:55:1: stack.age-recipients.staging: not an age recipient: malformed recipient "` + good[:40] + `": invalid checksum`,
		}},
		{"not bech32", strings.Replace(good, "x", "b", 1), []string{
			`f.toml:55:1: stack.age-recipients.staging: not an age recipient: malformed recipient "` + strings.Replace(good, "x", "b", 1) + `": invalid character data part: s[0]=98`,
		}},
		{"plugin recipient", "age1yubikey1qwt50d05nh5vutpdzmlg5wn80xq5negm4uj9ghv0snvdd3yysf5yw3rhl3t", []string{
			`f.toml:55:1: stack.age-recipients.staging: "age1yubikey1qwt50d05nh5vutpdzmlg5wn80xq5negm4uj9ghv0snvdd3yysf5yw3rhl3t" is an age plugin recipient: use a plain age recipient (age1...), whose identity Flux can hold in the sops-age Secret`,
		}},
		{"ssh key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN", []string{
			`f.toml:55:1: stack.age-recipients.staging: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN" is an SSH key: use an age recipient (age1...), whose identity Flux holds in the sops-age Secret`,
		}},
		{"empty", "", []string{
			`f.toml:55:1: stack.age-recipients.staging: the age recipient is empty: use the public key of the environment's age identity (age1...)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, recipientProblems(t, tt.recipient)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
