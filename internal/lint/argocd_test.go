package lint

import (
	"os"
	"path/filepath"
	"testing"
)

// TestArgoCDRepository: what render writes for a cluster on Argo CD is
// clean, its repository Secret (a URL, no credential) included; the same
// Secret holding a password is plaintext in Git.
func TestArgoCDRepository(t *testing.T) {
	rep, err := Run("../render/testdata/argocd/golden", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("render's output for Argo CD: %s", f)
	}
	dir := t.TempDir()
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: fleet\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  url: https://git.example.com/fleet.git\n  password: hunter2\n"
	if err := os.WriteFile(filepath.Join(dir, "repository.yaml"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "plaintext-secret" {
		t.Errorf("a repository Secret with a password: %v", rep.Findings)
	}
}
