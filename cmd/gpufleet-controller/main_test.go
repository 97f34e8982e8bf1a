package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestRunExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"help", []string{"-h"}, 0, "-leader-elect"},
		{"unknown flag", []string{"--bogus"}, exitUsage, "flag provided but not defined"},
		{"bad selector", []string{"--driver-pod-selector", "app in ("}, exitUsage, "driver pod selector"},
		{"negative duration", []string{"--drain-retry", "-1s"}, exitUsage, "negative"},
		{"renew deadline past the lease", []string{"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "3s"}, exitUsage, "renew deadline 3s must be shorter"},
		{"unreadable kubeconfig", []string{"--kubeconfig", bad}, exitFailed, "no cluster to talk to"},
		{"zero QPS", []string{"--kube-api-qps", "0"}, exitUsage, "--kube-api-qps must be above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(tt.args, &out, cancelled); code != tt.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tt.code, out.String())
			}
			if !strings.Contains(out.String(), tt.say) {
				t.Errorf("output does not say %q:\n%s", tt.say, out.String())
			}
		})
	}
}

// TestRateLimitsWhateverTheKubeconfig: the client's QPS and burst are the
// flags' whether the kubeconfig is a --kubeconfig file or $KUBECONFIG.
func TestRateLimitsWhateverTheKubeconfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	const good = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kc, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	for name, file := range map[string]string{"--kubeconfig": kc, "$KUBECONFIG": ""} {
		cfg, err := restConfig(file, 75, 150)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.QPS != 75 || cfg.Burst != 150 {
			t.Errorf("%s: QPS %v burst %d, want 75 and 150", name, cfg.QPS, cfg.Burst)
		}
	}
}

// TestVersion: --version prints the version the build was stamped with
// (make release, the Dockerfile) and exits 0 without a cluster.
func TestVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.9.9"
	var out strings.Builder
	if code := run([]string{"--version"}, &out, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if got := strings.TrimSpace(out.String()); got != "gpufleet-controller v9.9.9" {
		t.Errorf("--version printed %q", got)
	}
}
