package fleet

import (
	"errors"
	"strings"
	"testing"
)

// TestNamesUsedAsPaths: every name render or `gpufleet secret` puts in a
// path is refused, with its file, line and key, when it could leave the
// folder it names or land in another's: a secret named ../../escaped, or
// holding a newline and a CI log command, an environment named base (whose
// overlays would overwrite apps/base), names too long or not DNS labels.
func TestNamesUsedAsPaths(t *testing.T) {
	example := mustRead(t, "../../examples/fleet.toml")
	// Without the serving stack, for the environment cases (its tables
	// name the environments).
	stack, promotion := strings.Index(example, "# ---------------------------------------------------------------- serving stack"), strings.Index(example, "# ---------------------------------------------------------------- promotion")
	withoutStack := example[:stack] + example[promotion:]
	lineOf := func(src, text string) int {
		i := strings.Index(src, text)
		if i < 0 {
			t.Fatalf("no %q in the fleet file", text)
		}
		return strings.Count(src[:i], "\n") + 1
	}
	tests := []struct {
		name     string
		src      string
		key, msg string
		line     string // the text on the problem's line
	}{
		{
			name: "secret leaving the repository",
			src:  strings.Replace(example, `secrets = ["litellm-master-key"]`, `secrets = ["../../escaped"]`, 1),
			key:  "stack.services.litellm.secrets[0]", msg: `"../../escaped" is not a valid Secret name`, line: `secrets = ["../../escaped"]`,
		},
		{
			name: "secret forging CI log commands",
			src:  strings.Replace(example, `secrets = ["litellm-master-key"]`, `secrets = ["litellm-master-key", "x\n::stop-commands::x"]`, 1),
			key:  "stack.services.litellm.secrets[1]", msg: `"x\n::stop-commands::x" is not a valid Secret name`, line: `secrets = ["litellm-master-key", "x\n::stop-commands::x"]`,
		},
		{
			name: "secret declared twice",
			src:  strings.Replace(example, `secrets = ["litellm-master-key"]`, `secrets = ["litellm-master-key", "litellm-master-key"]`, 1),
			key:  "stack.services.litellm.secrets[1]", msg: `duplicate secret "litellm-master-key" (also secrets[0])`, line: `secrets = ["litellm-master-key", "litellm-master-key"]`,
		},
		{
			name: "environment named base",
			src:  strings.Replace(withoutStack, `environment = "staging"`, `environment = "base"`, 1),
			key:  "clusters.stg-h100.environment", msg: `"base" is reserved and cannot name an environment: apps/base holds every service's base`, line: `environment = "base"`,
		},
		{
			name: "environment with a slash",
			src:  strings.Replace(withoutStack, `environment = "staging"`, `environment = "../staging"`, 1),
			key:  "clusters.stg-h100.environment", msg: `"../staging" is not a valid environment name`, line: `environment = "../staging"`,
		},
		{
			name: "environment too long",
			src:  strings.Replace(withoutStack, `environment = "staging"`, `environment = "`+strings.Repeat("s", 64)+`"`, 1),
			key:  "clusters.stg-h100.environment", msg: `is not a valid environment name: use at most 63`, line: `environment = "sss`,
		},
		{
			name: "service namespace too long",
			src:  strings.Replace(example, `namespace = "llm-data"`, `namespace = "`+strings.Repeat("n", 64)+`"`, 1),
			key:  "stack.services.qdrant.namespace", msg: `is not a valid namespace: use at most 63`, line: `namespace = "nnn`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("fleet.toml", []byte(tt.src))
			var probs Problems
			if !errors.As(err, &probs) {
				t.Fatalf("want Problems, got %v", err)
			}
			for _, p := range probs {
				if p.Key == tt.key && strings.Contains(p.Message, tt.msg) {
					if want := lineOf(tt.src, tt.line); p.Line != want || p.File != "fleet.toml" {
						t.Errorf("%s: at %s:%d, want fleet.toml:%d", p.Key, p.File, p.Line, want)
					}
					return
				}
			}
			t.Errorf("no problem %s: %s…; got:\n%v", tt.key, tt.msg, err)
		})
	}
}
