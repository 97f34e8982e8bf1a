package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLintReadsNothingOutside: a manifest that is a symbolic link out of
// the repository, and a secretGenerator file named out of it, are
// reported, never read: the file outside holds a plaintext Secret, which
// lint would otherwise report as the link's; a link inside the repository
// is read like the file it names.
func TestLintReadsNothingOutside(t *testing.T) {
	top := t.TempDir()
	repo, outside := filepath.Join(top, "repo"), filepath.Join(top, "outside.yaml")
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: outside\nstringData:\n  token: example-only\n"
	for p, data := range map[string]string{
		outside:                                  secret,
		filepath.Join(repo, "apps", "real.yaml"): strings.Replace(secret, "outside", "inside", 1),
		filepath.Join(repo, "apps", "kustomization.yaml"): "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsecretGenerator:\n  - name: g\n    envs:\n      - ../../outside.yaml\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(repo, "apps", "leak.yaml"):  filepath.Join("..", "..", "outside.yaml"),
		filepath.Join(repo, "apps", "alias.yaml"): "real.yaml",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symbolic links unavailable here: %v", err)
		}
	}
	rep, err := Run(repo, Options{ApplyTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.File+":"+f.Rule+":"+f.Message)
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"apps/leak.yaml:link-outside:",
		"apps/kustomization.yaml:missing-resource:secretGenerator g file ../../outside.yaml is listed but missing",
		"apps/alias.yaml:plaintext-secret:Secret inside holds stringData in plaintext",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no finding %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Secret outside") {
		t.Errorf("lint read the file outside the repository:\n%s", text)
	}
}
