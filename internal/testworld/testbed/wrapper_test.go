package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestKubeWrapperSharesVersions: the kube wrapper (hack/testbin/kube)
// requires every module it shares with gpufleet at gpufleet's version,
// so that the packages both compile (apimachinery, client-go, x/net...)
// are compiled once on a cold machine (hack/testbin.sh, gobuild). A
// version bump in go.mod must be made there too: `go get` the module at
// gpufleet's version in a copy of the wrapper, `go mod tidy`, copy back.
func TestKubeWrapperSharesVersions(t *testing.T) {
	ours := requires(t, filepath.Join("..", "..", "..", "go.mod"))
	kube := requires(t, filepath.Join("..", "..", "..", "hack", "testbin", "kube", "go.mod"))
	shared := 0
	for path, v := range kube {
		if want, ok := ours[path]; ok {
			shared++
			if v != want {
				t.Errorf("hack/testbin/kube/go.mod requires %s %s, gpufleet's go.mod %s", path, v, want)
			}
		}
	}
	if shared < 20 {
		t.Errorf("only %d modules in both go.mod files: is the kube wrapper still the one the testbed builds?", shared)
	}
}

// requires reads a go.mod's requirements, replacements applied.
func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}
