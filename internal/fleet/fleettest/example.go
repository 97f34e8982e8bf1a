package fleettest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ExampleWithoutStack is examples/fleet.toml without its serving stack: the
// stack's Secrets are written by sops, which a test may not have, and lint
// rightly fails a tree without them.
func ExampleWithoutStack(tb testing.TB) []byte {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join(moduleRoot(tb), "examples", "fleet.toml"))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(src)
	const stack, promotion = "# ---------------------------------------------------------------- serving stack", "# ---------------------------------------------------------------- promotion"
	i, j := strings.Index(s, stack), strings.Index(s, promotion)
	if i < 0 || j < i {
		tb.Fatal("examples/fleet.toml has no serving stack section before [promotion]")
	}
	return []byte(s[:i] + s[j:])
}
