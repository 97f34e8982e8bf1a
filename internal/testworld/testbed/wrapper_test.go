package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// TestWrappersShareVersions: the wrapper modules the testbed builds its Go
// programs from (hack/testbin/<name>) require no module older than
// gpufleet does, so that the packages they share with gpufleet and with each
// other (apimachinery, client-go, x/net...) are compiled once on a cold
// machine (hack/testbin.sh, gobuild); the kube wrapper, the largest, shares
// every module at gpufleet's exact version. A version bump in go.mod must be
// made in them too: `go get` the module at gpufleet's version in a copy of
// the wrapper, `go mod tidy -e`, copy go.mod and go.sum back. Where a
// wrapper needs a newer version than gpufleet's it keeps it (not shared), and
// a pin a program's own build needs is listed in pinned.
func TestWrappersShareVersions(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	ours := requires(t, filepath.Join(root, "go.mod"))
	pinned := map[string]map[string]string{
		"flux": {
			"sigs.k8s.io/kustomize/api":                         "kustomize-controller's replace directive",
			"sigs.k8s.io/kustomize/kyaml":                       "kustomize-controller's replace directive",
			"github.com/fluxcd/image-automation-controller/api": "the controller's own API, at its release",
			"github.com/fluxcd/image-reflector-controller/api":  "the controller's own API, at its release",
			"github.com/fluxcd/notification-controller/api":     "the controller's own API, at its release",
		},
	}
	for _, name := range []string{"kube", "flux", "kwok", "sops"} {
		theirs := requires(t, filepath.Join(root, "hack", "testbin", name, "go.mod"))
		shared := 0
		for path, v := range theirs {
			want, ok := ours[path]
			if !ok {
				continue
			}
			switch c := semver.Compare(v, want); {
			case c == 0:
				shared++
			case pinned[name][path] != "":
			case c < 0 || name == "kube":
				t.Errorf("hack/testbin/%s/go.mod requires %s %s, gpufleet's go.mod %s", name, path, v, want)
			}
		}
		if shared < 20 {
			t.Errorf("only %d modules at one version in gpufleet's and hack/testbin/%s's go.mod: is it still a wrapper the testbed builds?", shared, name)
		}
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
