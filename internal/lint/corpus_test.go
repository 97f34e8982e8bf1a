package lint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus/*/want.txt")

// TestCorpus lints small repositories written for the project, one per
// class of mistake lint once made on public Flux repositories, and
// compares every finding and drift row with the case's want.txt:
//
//   - patch-files-are-not-objects: a strategic-merge patch of a Flux
//     Kustomization read as a Kustomization (prune off, 0s interval);
//   - merge-keys: YAML merge keys and aliases not resolved;
//   - remote-resources: scheme-less remote bases reported as missing;
//   - secret-generator: plaintext from secretGenerator literals and files;
//   - sops-plaintext-value: a plaintext value in a SOPS-encrypted Secret;
//   - path-missing: a spec.path that does not exist;
//   - patches-components-missing: missing patches: and components: files;
//   - helmrelease-depends-on: a HelmRelease dependsOn to nothing;
//   - invalid-durations: durations the API server refuses (read as 0s);
//   - webhook-token-missing: the push Receiver's token not yet written,
//     with the command that writes it;
//   - plaintext-json: a Secret in a .json resource (kustomize reads JSON
//     as YAML), beside JSON files that are not manifests;
//   - plaintext-in-list: Secrets as items of a List, a List in a List and
//     a SecretList, which kustomize expands;
//   - inline-patches: Secret data written by patches (strategic merge and
//     JSON 6902; inline, in a file, by target; patches,
//     patchesStrategicMerge and patchesJson6902; a Flux Kustomization's
//     spec.patches);
//   - generator-everywhere: secretGenerator in a Component, with the older
//     env:, and in a kustomization no Flux Kustomization builds, with a
//     file outside the repository (which kustomize refuses).
func TestCorpus(t *testing.T) {
	cases, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rep, err := Run(dir, Options{ApplyTime: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, f := range rep.Findings {
				fmt.Fprintln(&got, f.String())
			}
			for _, d := range rep.Drift {
				fmt.Fprintf(&got, "drift %s every %s\n", d.Kustomization, d.Interval)
			}
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
