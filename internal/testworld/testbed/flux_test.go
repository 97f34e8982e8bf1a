package testbed

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: default
data:
  driver: "570.172.08"
`

// TestFluxAppliesAndPrunes proves Flux is real: a folder committed to the git
// server is applied by kustomize-controller, and a commit that removes an
// object prunes it from the cluster.
func TestFluxAppliesAndPrunes(t *testing.T) {
	tb := New(t, Options{Flux: true, Git: true})
	c := tb.Clusters()[0]
	ctx := t.Context()

	repo, err := tb.Git.NewRepo("fleet.git", "main", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := repo.CommitFiles(map[string]string{
		"clusters/one/keep.yaml":  fmt.Sprintf(configMapYAML, "keep"),
		"clusters/one/prune.yaml": fmt.Sprintf(configMapYAML, "prune"),
	}, "add two ConfigMaps")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplySync(ctx, Sync{Name: "fleet", URL: repo.URL, Path: "./clusters/one"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.WaitApplied(ctx, "fleet", repo.Revision(first), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("first commit applied in %s", time.Since(start).Round(10*time.Millisecond))
	for _, name := range []string{"keep", "prune"} {
		cm := &corev1.ConfigMap{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
			t.Fatalf("ConfigMap %s after first commit: %v", name, err)
		}
		if cm.Labels["kustomize.toolkit.fluxcd.io/name"] != "fleet" {
			t.Errorf("ConfigMap %s labels = %v, want Flux's ownership label", name, cm.Labels)
		}
	}

	second, err := repo.CommitFiles(map[string]string{
		"clusters/one/keep.yaml": fmt.Sprintf(configMapYAML, "keep"),
	}, "remove a ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c.WaitApplied(ctx, "fleet", repo.Revision(second), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("second commit applied in %s", time.Since(start).Round(10*time.Millisecond))
	err = c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "prune"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap prune after second commit: error = %v, want NotFound (pruned)", err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keep"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("ConfigMap keep after second commit: %v", err)
	}
}
