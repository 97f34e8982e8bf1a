package lint

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFindingsOnHandWrittenRepository(t *testing.T) {
	rep, err := Run("testdata/bad", Options{ApplyTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.String())
	}
	want := []string{
		"apps/prod/kustomization.yaml:6: error: resource missing.yaml is listed but missing [missing-resource]; fix: add the file (an encrypted Secret: `gpufleet secret encrypt`) or remove the entry",
		"apps/prod/secret.yaml:6: error: Secret hf-token holds stringData in plaintext [plaintext-secret]; fix: encrypt it with SOPS (`gpufleet secret encrypt`), and delete the plaintext from Git history",
		"clusters/prod/apps.yaml:6: warning: Kustomization apps is a dependency of infra but neither waits nor has health checks: they start before it is healthy [no-wait]; fix: set spec.wait: true or list spec.healthChecks",
		"clusters/prod/apps.yaml:7: warning: Kustomization apps: interval 30s is below one minute: it loads the API server and the source for little gain [short-interval]; fix: use 1m or more, and a push Receiver for fast delivery",
		"clusters/prod/apps.yaml:9: warning: Kustomization apps: prune is off: objects removed from Git stay in the cluster [prune-off]; fix: set spec.prune: true",
		"clusters/prod/apps.yaml:10: error: Kustomization apps: timeout 2m0s is shorter than the start-up time 10m0s declared by the startup probe of deployment/vllm [timeout-below-startup]; fix: set spec.timeout to at least 15m0s",
		"clusters/prod/apps.yaml:14: error: dependsOn cycle: apps → infra → apps [depends-on-cycle]; fix: remove one dependsOn of the cycle",
		"clusters/prod/apps.yaml:14: error: Kustomization apps: dependsOn flux-system/monitoring, which no file in the repository defines [depends-on-missing]; fix: fix the name or namespace, or add the Kustomization",
		"clusters/prod/infra.yaml:6: warning: Kustomization infra is a dependency of apps but neither waits nor has health checks: they start before it is healthy [no-wait]; fix: set spec.wait: true or list spec.healthChecks",
		"clusters/prod/infra.yaml:8: error: Kustomization infra: spec.path ./infra is not a folder of the repository: the Kustomization fails to build [path-missing]; fix: fix the path, or add the folder",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if rep.Errors() != 6 {
		t.Errorf("errors: %d, want 6", rep.Errors())
	}
	wantDrift := []Drift{
		{Kustomization: "clusters/prod:flux-system/apps", File: "clusters/prod/apps.yaml", Interval: 30 * time.Second, Mean: 45 * time.Second, Worst: time.Minute},
		{Kustomization: "clusters/prod:flux-system/infra", File: "clusters/prod/infra.yaml", Interval: time.Hour, Mean: 30*time.Minute + 30*time.Second, Worst: time.Hour + 30*time.Second},
	}
	if diff := cmp.Diff(wantDrift, rep.Drift); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
}

func TestCleanRepository(t *testing.T) {
	rep, err := Run("testdata/good", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Errorf("a clean repository has findings: %v", rep.Findings)
	}
}
