package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// EnvTestbin names the environment variable that points at the folder of
// testbed programs. The Makefile exports it; without it, bin/testbin under the
// module root is used.
const EnvTestbin = "GPUFLEET_TESTBIN"

// ErrMissingBinaries is wrapped by the error [FindBinaries] and [Start] return
// when a program of the testbed is not built yet.
var ErrMissingBinaries = errors.New("testbed programs missing")

// Names of the programs hack/testbin.sh builds.
const (
	binEtcd                = "etcd"
	binKubeAPIServer       = "kube-apiserver"
	binSourceController    = "source-controller"
	binKustomizeController = "kustomize-controller"
)

// Binaries is the folder that holds the testbed's programs and Flux's CRDs.
type Binaries struct {
	// Dir is the folder itself, absolute.
	Dir string
}

// FindBinaries locates the testbed folder and checks that etcd and
// kube-apiserver are in it. Flux's programs are checked by [Binaries.CheckFlux]
// only when a test asks for Flux.
func FindBinaries() (Binaries, error) {
	dir := os.Getenv(EnvTestbin)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Binaries{}, fmt.Errorf("find testbed programs: %w", err)
		}
		root, err := sharedtest.ModuleRoot(wd)
		if err != nil {
			return Binaries{}, fmt.Errorf("find testbed programs: %w (set %s or run `make testbin`)", err, EnvTestbin)
		}
		dir = filepath.Join(root, "bin", "testbin")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Binaries{}, fmt.Errorf("find testbed programs: %w", err)
	}
	b := Binaries{Dir: abs}
	return b, b.check(binEtcd, binKubeAPIServer)
}

// CheckFlux reports whether Flux's controllers and CRDs are present.
func (b Binaries) CheckFlux() error {
	if err := b.check(binSourceController, binKustomizeController); err != nil {
		return err
	}
	matches, _ := filepath.Glob(filepath.Join(b.FluxCRDDir(), "*.yaml"))
	if len(matches) == 0 {
		return fmt.Errorf("%w: no Flux CRDs in %s: run `make testbin`", ErrMissingBinaries, b.FluxCRDDir())
	}
	return nil
}

// Path returns the path of the program name in the folder.
func (b Binaries) Path(name string) string { return filepath.Join(b.Dir, name) }

// FluxCRDDir is the folder of Flux's CRD manifests, copied there by
// hack/testbin.sh because a fresh module cache holds only Flux's api modules.
func (b Binaries) FluxCRDDir() string { return filepath.Join(b.Dir, "crds", "flux") }

func (b Binaries) check(names ...string) error {
	var missing []string
	for _, n := range names {
		info, err := os.Stat(b.Path(n))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s not found in %s: run `make testbin` to build them "+
		"(the first build takes about 30 minutes, later ones seconds)",
		ErrMissingBinaries, strings.Join(missing, ", "), b.Dir)
}
