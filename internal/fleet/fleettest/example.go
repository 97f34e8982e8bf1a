package fleettest

import (
	"os"
	"path/filepath"
	"regexp"
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

// WithoutOFEDDriver is a fleet file with no release naming an OFED driver:
// what a fleet on the gpu-operator actuator must be where a pool manages
// NICs (the GPU Operator's upgrade controller cannot share a maintenance
// with the Network Operator's), so tests of that actuator can start from
// the example.
func WithoutOFEDDriver(src string) string {
	return ofedDriverLine.ReplaceAllString(src, "")
}

// ofedDriverLine is a release's ofed-driver key, comment and all.
var ofedDriverLine = regexp.MustCompile(`(?m)^ofed-driver *=.*\n`)
