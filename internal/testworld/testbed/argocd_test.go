package testbed

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestArgoCDAppliesAndPrunes proves Argo CD is real: an Application with
// automated sync applies a kustomize folder committed to the git server
// (built by the repo-server's kustomize), a commit that removes an object
// prunes it, and a hand edit is repaired by self-heal. Argo CD prunes with
// foreground deletion by default, which the garbage collector of
// kube-controller-manager finishes (Kube).
func TestArgoCDAppliesAndPrunes(t *testing.T) {
	tb := New(t, Options{ArgoCD: []string{"cluster-1"}, Git: true, Kube: true})
	c := tb.Clusters()[0]
	ctx := t.Context()
	if c.ArgoCD == nil || c.Flux != nil {
		t.Fatalf("cluster-1 runs Argo CD %t, Flux %t; want Argo CD alone", c.ArgoCD != nil, c.Flux != nil)
	}
	repo, err := tb.Git.NewRepo("fleet.git", "main", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	first, err := repo.CommitFiles(map[string]string{
		"clusters/one/kustomization.yaml": kustomization + "- keep.yaml\n- prune.yaml\n",
		"clusters/one/keep.yaml":          fmt.Sprintf(configMapYAML, "keep"),
		"clusters/one/prune.yaml":         fmt.Sprintf(configMapYAML, "prune"),
	}, "add two ConfigMaps")
	if err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "fleet", "namespace": ArgoCDNamespace},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": repo.URL, "targetRevision": "main", "path": "clusters/one"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		},
	}}
	if err := c.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.WaitSynced(ctx, "fleet", first, true, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("first commit synced in %s", time.Since(start).Round(10*time.Millisecond))
	for _, name := range []string{"keep", "prune"} {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("ConfigMap %s after the first commit: %v", name, err)
		}
	}

	second, err := repo.CommitFiles(map[string]string{
		"clusters/one/kustomization.yaml": kustomization + "- keep.yaml\n",
		"clusters/one/keep.yaml":          fmt.Sprintf(configMapYAML, "keep"),
	}, "remove a ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c.WaitSynced(ctx, "fleet", second, true, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("second commit synced in %s (the controller compares every %s)", time.Since(start).Round(10*time.Millisecond), ArgoCDResync)
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "prune"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap prune after the second commit: error %v, want NotFound (pruned)", err)
	}

	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keep"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["driver"] = "550.54.15"
	if err := c.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keep"}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["driver"] == "570.172.08" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("self-heal did not repair the hand edit in 60 s:\n%s", c.ArgoCD.LogTail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("hand edit repaired by self-heal in %s", time.Since(start).Round(10*time.Millisecond))
}
