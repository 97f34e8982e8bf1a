package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// stack adds the serving stack with SOPS-encrypted Secrets to the
// fleet: each cluster gets its environment's age key as flux-system/sops-age,
// "gpufleet secret encrypt" writes the Secrets encrypted, and the real
// kustomize-controller decrypts and applies them. No pod ever runs (no
// scheduler or kubelet), so the app's own Kustomization never becomes Ready;
// the infrastructure Kustomizations do, in dependency order.
func (s *fleetStory) stack() {
	const (
		masterKey = "sk-e2e-master-6f1c2b" // the plaintext that must never reach git
		token     = "e2e-webhook-token-93ad"
	)
	var rev string
	s.step("serving stack: age keys in the clusters, Secrets encrypted with gpufleet secret encrypt, pushed", func(w *Play) {
		recipients := map[string]string{}
		for env, cluster := range map[string]string{"staging": Staging, "prod": Prod} {
			id, err := age.GenerateX25519Identity()
			if err != nil {
				w.T.Fatal(err)
			}
			recipients[env] = id.Recipient().String()
			sec := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: testbed.FluxNamespace},
				StringData: map[string]string{"age.agekey": id.String()},
			}
			if err := w.Client(cluster).Create(w.Context(), sec); err != nil {
				w.T.Fatal(err)
			}
		}
		stack := fmt.Sprintf(`
[stack]
review-branch = "image-updates"

[stack.age-recipients]
staging = %q
prod = %q

[stack.services.litellm]
layer = "gateway"
namespace = "llm-gateway"
startup = "1m"
image = "ghcr.io/berriai/litellm"
tag = "1.67.0"
tag-range = ">=1.67.0 <2.0.0"
port = 4000
health = "/health/readiness"
secrets = ["litellm-master-key"]
`, recipients["staging"], recipients["prod"])
		f, err := os.OpenFile(w.FleetFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			w.T.Fatal(err)
		}
		_, err = f.WriteString(stack)
		if err := errors.Join(err, f.Close()); err != nil {
			w.T.Fatal(err)
		}
		if _, code := w.Gpufleet("render", "-f", w.FleetFile); code != 0 {
			w.T.Fatalf("render exit %d", code)
		}
		if _, code := w.Gpufleet("secret", "encrypt", "-f", w.FleetFile, "--webhook-token", "--from-literal", "token="+token); code != 0 {
			w.T.Fatalf("secret encrypt --webhook-token exit %d", code)
		}
		for _, env := range []string{"staging", "prod"} {
			if _, code := w.Gpufleet("secret", "encrypt", "-f", w.FleetFile, "--env", env, "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key="+masterKey); code != 0 {
				w.T.Fatalf("secret encrypt --env %s exit %d", env, code)
			}
		}
		w.Git("add", "-A")
		w.Git("commit", "-q", "-m", "Add the serving stack with its encrypted Secrets")
		rev = w.Push()
	})
	s.check("serving stack: no plaintext Secret in git", func(w *Play) {
		for _, plain := range []string{masterKey, token} {
			cmd := exec.Command("git", "-C", w.Dir, "grep", "-q", "-F", plain, "HEAD")
			if err := cmd.Run(); err == nil {
				w.T.Errorf("the plaintext %q is in the committed tree", plain)
			}
		}
		b, err := os.ReadFile(filepath.Join(w.Dir, "apps", "staging", "litellm", "secret-litellm-master-key.sops.yaml"))
		if err != nil {
			w.T.Fatal(err)
		}
		if !strings.Contains(string(b), "ENC[AES256_GCM,") || !strings.Contains(string(b), "sops:") {
			w.T.Errorf("the committed Secret is not SOPS-encrypted:\n%s", b)
		}
	})
	ready := map[string]time.Duration{}
	var secretAt time.Duration
	s.step("serving stack: kustomize-controller decrypts and applies the Secrets with the cluster's age key", func(w *Play) {
		t0 := time.Now()
		c := w.Client(Staging)
		w.Eventually(3*time.Minute, "the decrypted Secret llm-gateway/litellm-master-key in stg", func() (bool, string) {
			for _, k := range []string{"infra-controllers", "infra-configs", render.WebhookKustomization} {
				if _, ok := ready[k]; !ok && kustomizationReadyAt(w, Staging, k, rev) {
					ready[k] = time.Since(t0)
				}
			}
			sec := &corev1.Secret{}
			if err := c.Get(w.Context(), client.ObjectKey{Namespace: "llm-gateway", Name: "litellm-master-key"}, sec); err != nil {
				return false, err.Error()
			}
			if secretAt == 0 {
				secretAt = time.Since(t0)
			}
			if got := string(sec.Data["master-key"]); got != masterKey {
				w.T.Fatalf("the Secret in the cluster holds %q, want the decrypted value", got)
			}
			return len(ready) == 3, fmt.Sprintf("Ready: %v", ready)
		})
		tok := &corev1.Secret{}
		if err := c.Get(w.Context(), client.ObjectKey{Namespace: testbed.FluxNamespace, Name: render.WebhookSecretName}, tok); err != nil {
			w.T.Fatalf("webhook token Secret: %v", err)
		}
		if string(tok.Data["token"]) != token {
			w.T.Errorf("webhook token Secret holds %q, want the decrypted value", tok.Data["token"])
		}
		w.T.Logf("infra Kustomizations Ready after %v; the app's Secret appeared after %s", ready, secretAt)
	})
	s.check("serving stack: infra-controllers, then infra-configs, then the app", func(w *Play) {
		if ready["infra-configs"] < ready["infra-controllers"] {
			w.T.Errorf("infra-configs Ready (%s) before infra-controllers (%s)", ready["infra-configs"], ready["infra-controllers"])
		}
		if secretAt < ready["infra-configs"] {
			w.T.Errorf("the app applied (%s) before infra-configs was Ready (%s)", secretAt, ready["infra-configs"])
		}
	})
}
