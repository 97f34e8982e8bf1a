package explain_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/explain"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// fluxKustomization is a Flux Kustomization of the cluster's chain, as the
// cluster's folder lists it.
func fluxKustomization(name, path, dependsOn string, wait bool, timeout string) string {
	s := fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: %s\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  timeout: %s\n", name, path, timeout)
	if wait {
		s += "  wait: true\n"
	}
	if dependsOn != "" {
		s += "  dependsOn:\n  - name: " + dependsOn + "\n"
	}
	return s
}

// TestExplainWithRealFlux reads statuses the real source-controller and
// kustomize-controller wrote, not arranged ones: the condition messages and
// revision strings explain parses are Flux's own. The cluster's chain
// (operators, config, lifecycle; without dependsOn here, which
// kustomize-controller would retry only every 30 s) applies small stand-in
// folders; the
// lifecycle step waits for a Deployment that never becomes Available (no
// controller-manager runs here), so its health check fails on its timeout
// for real. Then a commit is pushed that the GitRepository (interval 1h)
// has not fetched: the source is the first broken link.
func TestExplainWithRealFlux(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	tb := testbed.New(t, testbed.Options{Clusters: []string{cluster}, Flux: true, Git: true})
	ctx := t.Context()
	c := tb.Cluster(cluster)
	repo, err := tb.Git.NewRepo("fleet.git", "main", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"clusters/prod-h100-a/kustomization.yaml":  "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-operators.yaml\n- flux-config.yaml\n- flux-lifecycle.yaml\n",
		"clusters/prod-h100-a/flux-operators.yaml": fluxKustomization("operators", "./stand/operators", "", false, "1m"),
		"clusters/prod-h100-a/flux-config.yaml":    fluxKustomization("config", "./stand/config", "", false, "1m"),
		"clusters/prod-h100-a/flux-lifecycle.yaml": fluxKustomization("lifecycle", "./stand/lifecycle", "", true, "3s"),
		"stand/operators/configmap.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: operators\n  namespace: flux-system\ndata:\n  step: operators\n",
		"stand/config/configmap.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: flux-system\ndata:\n  step: config\n",
		"stand/lifecycle/deployment.yaml":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: stuck\n  namespace: flux-system\nspec:\n  selector:\n    matchLabels:\n      app: stuck\n  template:\n    metadata:\n      labels:\n        app: stuck\n    spec:\n      containers:\n      - name: c\n        image: registry.invalid/stuck:1\n",
	}
	hash, err := repo.CommitFiles(files, "the chain")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplySync(ctx, testbed.Sync{Name: "flux-system", URL: repo.URL, Path: "./clusters/prod-h100-a", Interval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitApplied(ctx, "config", repo.Revision(hash), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	explainAt := func(t *testing.T, rev string) *explain.Answer {
		t.Helper()
		a, err := explain.Options{Fleet: f, Cluster: cluster, Revision: rev, Kubeconfig: tb.Kubeconfig, Timeout: 20 * time.Second}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	t.Run("a health check that fails on its timeout", func(t *testing.T) {
		// kustomize-controller gives up on the health check some time
		// after spec.timeout (3s): about 30 s here. Meanwhile lifecycle is
		// progressing, and the missing HelmReleases (no helm-controller
		// here) are the first broken link.
		var a *explain.Answer
		deadline := time.Now().Add(60 * time.Second)
		for {
			a = explainAt(t, hash)
			if a.At != nil && a.At.Step == explain.StepHealthCheck || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if a.At == nil || a.At.Step != explain.StepHealthCheck || a.At.Object.Name != "lifecycle" {
			t.Fatalf("want the lifecycle step's health check, got %+v", a.At)
		}
		if a.At.Condition == nil || a.At.Condition.Reason != "HealthCheckFailed" || !strings.Contains(a.At.Condition.Message, "Deployment/flux-system/stuck") {
			t.Errorf("condition %+v: want kustomize-controller's HealthCheckFailed naming the Deployment", a.At.Condition)
		}
		if a.At.Next != "kubectl -n flux-system describe deployment stuck" {
			t.Errorf("next %q", a.At.Next)
		}
		for _, l := range a.Chain[:2] {
			if l.State != explain.OK {
				t.Errorf("%s %s is %s before the broken link: %s", l.Step, l.Object.Name, l.State, l.Message)
			}
		}
	})

	t.Run("a revision pushed but not fetched", func(t *testing.T) {
		files["stand/config/configmap.yaml"] = strings.Replace(files["stand/config/configmap.yaml"], "step: config", "step: config-2", 1)
		next, err := repo.CommitFiles(files, "a change Flux has not fetched")
		if err != nil {
			t.Fatal(err)
		}
		a := explainAt(t, next)
		if a.At == nil || a.At.Step != explain.StepRevision || a.At.Object.Kind != "GitRepository" || a.At.Next != "flux reconcile source git flux-system -n flux-system" {
			t.Fatalf("want the GitRepository's revision, got %+v", a.At)
		}
		if want := "has fetched " + repo.Revision(hash) + ", not the expected " + next[:12] + ": is it pushed to branch main? Flux fetches every 1h0m0s"; !strings.Contains(a.At.Message, want) {
			t.Errorf("message %q, want %q", a.At.Message, want)
		}
		for _, l := range a.Chain {
			if l.Object.Kind == "Kustomization" && l.State != explain.Blocked && l.Object.Name != "lifecycle" {
				t.Errorf("Kustomization %s is %s, want blocked behind the source", l.Object.Name, l.State)
			}
		}
	})
}
