package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/gpufleet/gpufleet/internal/secrets"
	"github.com/gpufleet/gpufleet/internal/secrets/sopstest"
)

// decrypt opens a SOPS file with id through the testbed's sops, the
// program `gpufleet secret` runs (sopstest.Use points it there).
func decrypt(t *testing.T, enc []byte, id *age.X25519Identity) ([]byte, error) {
	t.Helper()
	tool, err := secrets.Find(sopstest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	return tool.Decrypt(context.Background(), enc, secrets.Identities{Keys: id.String()})
}

// fleetWithKeys copies the example fleet with fresh age recipients for both
// environments and returns its path and the identities.
func fleetWithKeys(t *testing.T) (string, map[string]*age.X25519Identity) {
	t.Helper()
	path := copyExample(t)
	src, _ := os.ReadFile(path)
	ids := map[string]*age.X25519Identity{}
	text := string(src)
	for _, env := range []string{"staging", "prod"} {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		ids[env] = id
		start := strings.Index(text, env+` = "age1`)
		end := strings.Index(text[start:], "\n")
		text = text[:start] + env + ` = "` + id.Recipient().String() + `"` + text[start+end:]
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// TestRenderedRepositoryLintsClean renders the example, encrypts the
// secrets it declares with `gpufleet secret encrypt`, and lints the result:
// no finding. Before the secrets exist, lint names each missing one.
func TestRenderedRepositoryLintsClean(t *testing.T) {
	sopstest.Use(t)
	fleetFile, ids := fleetWithKeys(t)
	dir := filepath.Dir(fleetFile)
	if code, out, errOut := run(t, "render", "-f", fleetFile); code != ExitOK {
		t.Fatalf("render: %d %s %s", code, out, errOut)
	}
	code, out, _ := run(t, "lint", dir)
	if code != ExitFailed || strings.Count(out, "[missing-resource]") != 2 || strings.Count(out, "[webhook-token-missing]") != 1 || !strings.Contains(out, "gpufleet secret encrypt --webhook-token") {
		t.Errorf("before the secrets exist lint must name the 2 missing service secrets and the webhook token, with the command, exit %d:\n%s", code, out)
	}
	// status says what to run for the webhook, until it has been run.
	webhookNotice := "run `gpufleet secret encrypt --webhook-token"
	if code, out, errOut := run(t, "status", "-f", fleetFile); code != ExitOK || !strings.Contains(out, webhookNotice) {
		t.Errorf("status before the webhook token exists must say what to run, exit %d:\n%s%s", code, out, errOut)
	}
	for _, env := range []string{"staging", "prod"} {
		if code, out, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--env", env, "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key=sk-"+env+"-secret"); code != ExitOK {
			t.Fatalf("secret encrypt: %d %s %s", code, out, errOut)
		}
	}
	if code, out, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--webhook-token", "--from-literal", "token=webhook-secret-token"); code != ExitOK {
		t.Fatalf("secret encrypt --webhook-token: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run(t, "status", "-f", fleetFile); code != ExitOK || strings.Contains(out, webhookNotice) {
		t.Errorf("status after the webhook token exists still asks for it, exit %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "lint", dir, "-o", "json")
	var rep struct {
		Findings []any `json:"findings"`
		Drift    []any `json:"drift"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("lint -o json: %v\n%s", err, out)
	}
	if code != ExitOK || len(rep.Findings) != 0 {
		t.Errorf("a rendered repository with its secrets must lint clean, exit %d:\n%s", code, out)
	}
	if len(rep.Drift) == 0 {
		t.Error("lint must report the drift-repair time of each Kustomization")
	}

	// No plaintext anywhere in the tree; each environment's key opens its own secret only.
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, plain := range []string{"sk-staging-secret", "sk-prod-secret", "webhook-secret-token"} {
			if strings.Contains(string(b), plain) {
				t.Errorf("%s holds a plaintext secret value", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	prodSecret, _ := os.ReadFile(filepath.Join(dir, "apps/prod/litellm/secret-litellm-master-key.sops.yaml"))
	if plain, err := decrypt(t, prodSecret, ids["prod"]); err != nil || !strings.Contains(string(plain), "sk-prod-secret") {
		t.Errorf("the prod key must open the prod secret: %v", err)
	}
	if _, err := decrypt(t, prodSecret, ids["staging"]); err == nil {
		t.Error("the staging key must not open the prod secret")
	}
	webhook, _ := os.ReadFile(filepath.Join(dir, "infrastructure/webhook/secret-webhook-token.sops.yaml"))
	for env, id := range ids {
		if _, err := decrypt(t, webhook, id); err != nil {
			t.Errorf("the %s key must open the shared webhook token: %v", env, err)
		}
	}
}

func TestSecretEncryptRefusesUndeclared(t *testing.T) {
	fleetFile, _ := fleetWithKeys(t)
	code, _, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--env", "prod", "--service", "vllm", "--name", "hf-token", "--from-literal", "token=x")
	if code != ExitUsage || !strings.Contains(errOut, `service vllm does not declare a secret "hf-token"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestSecretEdit(t *testing.T) {
	sopstest.Use(t)
	fleetFile, ids := fleetWithKeys(t)
	if code, _, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--env", "prod", "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key=old"); code != ExitOK {
		t.Fatal(errOut)
	}
	file := filepath.Join(filepath.Dir(fleetFile), "apps/prod/litellm/secret-litellm-master-key.sops.yaml")
	t.Setenv("SOPS_AGE_KEY", ids["prod"].String())
	t.Setenv("EDITOR", "sed -i s/master-key:\\ old/master-key:\\ new/")
	if code, out, errOut := run(t, "secret", "edit", file); code != ExitOK || !strings.Contains(out, "wrote") {
		t.Fatalf("edit: %d %s %s", code, out, errOut)
	}
	enc, _ := os.ReadFile(file)
	plain, err := decrypt(t, enc, ids["prod"])
	if err != nil || !strings.Contains(string(plain), "master-key: new") {
		t.Errorf("after edit: %v\n%s", err, plain)
	}
	if strings.Contains(string(enc), "new") && !strings.Contains(string(enc), "ENC[") {
		t.Error("the edited file is not encrypted")
	}

	// An editor that changes nothing leaves the file as it was.
	t.Setenv("EDITOR", "true")
	if code, out, errOut := run(t, "secret", "edit", file); code != ExitOK || !strings.Contains(out, "unchanged") {
		t.Errorf("edit with no change: %d %s %s", code, out, errOut)
	}
	if after, _ := os.ReadFile(file); string(after) != string(enc) {
		t.Error("an unchanged edit rewrote the file")
	}
}

// TestSecretEditKeepsRecipients edits the webhook token, encrypted to both
// environments, with the staging key alone: it stays encrypted to both.
func TestSecretEditKeepsRecipients(t *testing.T) {
	sopstest.Use(t)
	fleetFile, ids := fleetWithKeys(t)
	if code, _, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--webhook-token", "--from-literal", "token=old-token"); code != ExitOK {
		t.Fatal(errOut)
	}
	file := filepath.Join(filepath.Dir(fleetFile), "infrastructure/webhook/secret-webhook-token.sops.yaml")
	before, _ := os.ReadFile(file)
	want, err := secrets.Recipients(before)
	if err != nil || len(want) != 2 {
		t.Fatalf("the webhook token is encrypted to %v (%v), want both environments", want, err)
	}
	t.Setenv("SOPS_AGE_KEY", ids["staging"].String())
	t.Setenv("EDITOR", "sed -i s/old-token/new-token/")
	if code, out, errOut := run(t, "secret", "edit", file); code != ExitOK || !strings.Contains(out, "encrypted to 2 recipient(s)") {
		t.Fatalf("edit: %d %s %s", code, out, errOut)
	}
	after, _ := os.ReadFile(file)
	if got, err := secrets.Recipients(after); err != nil || !slices.Equal(got, want) {
		t.Errorf("after edit the file is encrypted to %v (%v), want %v", got, err, want)
	}
	if plain, err := decrypt(t, after, ids["prod"]); err != nil || !strings.Contains(string(plain), "token: new-token") {
		t.Errorf("the prod key must open the edit made with the staging key: %v\n%s", err, plain)
	}
}

// TestSecretNeedsSOPS: without a sops program the secret commands cannot
// find out anything (exit 3) and say how to install sops.
func TestSecretNeedsSOPS(t *testing.T) {
	fleetFile, ids := fleetWithKeys(t)
	t.Setenv("PATH", t.TempDir())
	t.Setenv(secrets.EnvSOPS, "")
	t.Setenv("SOPS_AGE_KEY", ids["prod"].String())
	file := filepath.Join(filepath.Dir(fleetFile), "apps/prod/litellm/secret-litellm-master-key.sops.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("sops:\n  age:\n    - recipient: "+ids["prod"].Recipient().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	encrypt := []string{"secret", "encrypt", "-f", fleetFile, "--env", "prod", "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key=x"}
	for _, args := range [][]string{
		encrypt,
		append(slices.Clone(encrypt), "--sops", filepath.Join(t.TempDir(), "sops")),
		{"secret", "edit", file},
	} {
		code, _, errOut := run(t, args...)
		if code != ExitUnknown || !strings.Contains(errOut, "sops not found") || !strings.Contains(errOut, "go install github.com/getsops/sops/v3/cmd/sops@") {
			t.Errorf("gpufleet %s: exit %d, want 3 with how to install sops:\n%s", strings.Join(args, " "), code, errOut)
		}
	}
}
