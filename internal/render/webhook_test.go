package render

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/lint"
)

// TestFreshRenderAppliesWithoutWebhookToken: before `gpufleet secret
// encrypt --webhook-token` has been run, a fresh render still applies.
// infra-configs (which every app depends on) builds with kustomize's API,
// only the webhook's own folder lacks its token, no Kustomization depends on
// the webhook, and lint names the command that writes the token.
func TestFreshRenderAppliesWithoutWebhookToken(t *testing.T) {
	out := renderFile(t, exampleFleet)
	if _, ok := out.Files[WebhookSecretFile]; ok {
		t.Fatalf("render wrote %s: only `gpufleet secret encrypt` does", WebhookSecretFile)
	}
	fs := filesys.MakeFsInMemory()
	for p, b := range out.Files {
		if err := fs.WriteFile("/"+p, b); err != nil {
			t.Fatal(err)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, dir := range []string{infraConfigs, infraControllers} {
		if _, err := k.Run(fs, "/"+dir); err != nil {
			t.Errorf("kustomize build %s without the webhook token: %v", dir, err)
		}
	}
	if _, err := k.Run(fs, "/"+infraWebhook); err == nil {
		t.Errorf("kustomize build %s succeeded without its token: the test no longer proves anything", infraWebhook)
	}

	// Nothing waits for the webhook.
	for p, b := range out.Files {
		if !strings.HasPrefix(path.Base(p), "flux-") {
			continue
		}
		var obj struct {
			Metadata struct{ Name string }
			Spec     struct {
				DependsOn []struct{ Name string } `json:"dependsOn"`
			}
		}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range obj.Spec.DependsOn {
			if d.Name == WebhookKustomization {
				t.Errorf("%s: Kustomization %s depends on %s, so a missing token would block it", p, obj.Metadata.Name, WebhookKustomization)
			}
		}
	}

	dir := t.TempDir()
	for p, b := range out.Files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := lint.Run(dir, lint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Rule == "webhook-token-missing" {
			found = true
			if f.Severity != lint.Warning || !strings.Contains(f.Fix, lint.WebhookTokenCommand) || f.File != path.Join(infraWebhook, "kustomization.yaml") {
				t.Errorf("webhook finding: %s", f)
			}
		}
	}
	if !found {
		t.Errorf("lint of a fresh render does not report the missing webhook token: %v", rep.Findings)
	}
}
