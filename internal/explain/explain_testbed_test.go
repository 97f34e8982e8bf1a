package explain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/explain"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

const (
	rev     = "0123456789abcdef0123456789abcdef01234567"
	cluster = "prod-h100-a"
	ks      = "kustomize.toolkit.fluxcd.io/v1"
)

// rollingFleet is the example fleet with r2026-10 rolled out to
// prod-h100-a alone, the canary cluster of wave prod-h100: its canary
// node's approval, r2026-10/prod-h100-a, is one of the names that wait.
func rollingFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	return f.WithPromotion(fleet.Promotion{Stable: f.Promotion.Stable, Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "prod-h100", Stage: fleet.StageCanary}})
}

// TestExplainOnRealCluster arranges prod-h100-a on a real API server as
// Flux, helm-controller, the GPU Operator and the lifecycle controller
// leave it once r2026-10 converged (helm-controller cannot be built here,
// so its HelmReleases' statuses are written as it would, on a stand-in
// CRD; the other CRDs are the real ones), with the Flux Kustomizations
// render writes (their dependsOn, timeouts, health checks and start-up
// annotations). Then it breaks one link of the chain at a time, and checks
// that explain names exactly that link, its object and the next command,
// and that the gate fails too.
func TestExplainOnRealCluster(t *testing.T) {
	f := rollingFleet(t)
	crds, err := gatetest.CRDDirs("../..", f.Releases["r2026-10"].GPUOperator)
	if err != nil {
		t.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{cluster}, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	ctx := t.Context()
	c := tb.Cluster(cluster).Client
	e := gate.Expect(f, cluster, rev)
	if _, err := gatetest.Arrange(ctx, c, e); err != nil {
		t.Fatal(err)
	}
	applyRendered(t, c, f, e)
	total := 0
	for _, p := range e.Pools {
		total += p.Nodes
	}
	createSource(t, c)

	run := func(t *testing.T, f *fleet.Fleet, kubeconfig string) (*explain.Answer, error) {
		t.Helper()
		return explain.Options{Fleet: f, Cluster: cluster, Revision: rev, Kubeconfig: kubeconfig, Timeout: 20 * time.Second}.Run(ctx)
	}
	gateVerdict := func(t *testing.T) gate.Status {
		t.Helper()
		rep := gate.Run(ctx, gate.Options{Fleet: f, Clusters: []string{cluster}, Revision: rev, Kubeconfig: tb.Kubeconfig, Timeout: 20 * time.Second, Now: time.Now})
		return rep.Verdict()
	}

	t.Run("a converged cluster: every link holds, as the gate finds", func(t *testing.T) {
		a, err := run(t, f, tb.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if a.Verdict != explain.Converged || a.At != nil {
			t.Fatalf("verdict %s at %+v", a.Verdict, a.At)
		}
		if v := gateVerdict(t); v != gate.Pass {
			t.Errorf("the gate says %s", v)
		}
		checkSchema(t, a)
		// The chain was walked, not skipped: every step of it is there.
		for _, step := range []explain.Step{explain.StepSource, explain.StepKustomization, explain.StepHelmRelease, explain.StepClusterPolicy, explain.StepNVIDIADriver, explain.StepDaemonSet, explain.StepRollout} {
			if !slices.ContainsFunc(a.Chain, func(l explain.Link) bool { return l.Step == step }) {
				t.Errorf("no %s link in the chain", step)
			}
		}
		if len(a.Nodes) != total {
			t.Errorf("%d nodes, want the %d of the rollout", len(a.Nodes), total)
		}
	})

	cordoned := fmt.Sprintf("%s-%d", e.Pools[0].Name, e.Pools[0].Nodes-1)
	notReady := []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout waiting for: [Deployment/llm-engines/vllm status: 'InProgress']", "lastTransitionTime": "2026-12-01T00:00:00Z"}}
	cases := []struct {
		name          string
		breakIt       func(t *testing.T)
		step          explain.Step
		kind, object  string
		message, next string
	}{
		{"a wrong revision fetched",
			func(t *testing.T) {
				// The source still has the commit before, and so has every
				// Kustomization applied: they are blocked behind it.
				old := "main@sha1:00000000deadbeef00000000deadbeef00000000"
				change(t, c, "source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "flux-system", nil, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, old, "status", "artifact", "revision")
				})
				for _, k := range e.Kustomizations {
					change(t, c, ks, "Kustomization", "flux-system", k, nil, func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedField(u.Object, old, "status", "lastAppliedRevision")
					})
				}
			},
			explain.StepRevision, "GitRepository", "flux-system", "has fetched main@sha1:00000000deadbeef00000000deadbeef00000000, not the expected 0123456789ab: is it pushed to branch main?", "flux reconcile source git flux-system -n flux-system"},
		{"a health check that fails on a timeout shorter than the model load",
			func(t *testing.T) {
				change(t, c, ks, "Kustomization", "flux-system", "app-vllm",
					func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedField(u.Object, "10m0s", "spec", "timeout")
					},
					func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedSlice(u.Object, notReady, "status", "conditions")
					})
			},
			explain.StepTimeout, "Kustomization", "app-vllm", "spec.timeout 10m0s is shorter than the start-up time 15m0s declared by service vllm in the fleet file", "gpufleet render --check"},
		{"a health check that fails within a timeout covering the start-up",
			func(t *testing.T) {
				change(t, c, ks, "Kustomization", "flux-system", "app-vllm", nil,
					func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedSlice(u.Object, notReady, "status", "conditions")
					})
			},
			explain.StepHealthCheck, "Kustomization", "app-vllm", "health checks did not pass within spec.timeout 23m0s: timeout waiting for: [Deployment/llm-engines/vllm", "kubectl -n llm-engines describe deployment vllm"},
		{"a dependsOn not Ready",
			func(t *testing.T) {
				createKustomization(t, c, "monitoring-crds", map[string]any{"type": "Ready", "status": "False", "reason": "BuildFailed", "message": "kustomization path not found: ./monitoring/crds", "lastTransitionTime": "2026-12-01T00:00:00Z"})
				change(t, c, ks, "Kustomization", "flux-system", "app-vllm",
					func(u *unstructured.Unstructured) {
						deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependsOn")
						_ = unstructured.SetNestedSlice(u.Object, append(deps, map[string]any{"name": "monitoring-crds"}), "spec", "dependsOn")
					},
					func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "DependencyNotReady", "message": "dependency 'flux-system/monitoring-crds' is not ready", "lastTransitionTime": "2026-12-01T00:00:00Z"}}, "status", "conditions")
					})
			},
			explain.StepDependsOn, "Kustomization", "monitoring-crds", "app-vllm waits for monitoring-crds (dependsOn), which is not Ready: kustomization path not found", "kubectl -n flux-system describe kustomization monitoring-crds"},
		{"an NVIDIADriver not ready",
			func(t *testing.T) {
				change(t, c, "nvidia.com/v1alpha1", "NVIDIADriver", "", e.NVIDIADrivers[0], nil, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, "notReady", "status", "state")
					_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "DriverNotReady", "message": "driver daemonset pods are not ready on 1 node", "lastTransitionTime": "2026-12-01T00:00:00Z"}}, "status", "conditions")
				})
			},
			explain.StepNVIDIADriver, "NVIDIADriver", e.NVIDIADrivers[0], "reports the NVIDIADriver notReady: driver daemonset pods are not ready on 1 node", "kubectl describe nvidiadriver " + e.NVIDIADrivers[0]},
		{"a node cordoned by hand",
			func(t *testing.T) {
				rolloutStatus(t, c, e.Rollout, "Progressing", nil, int64(total-1))
				change(t, c, "v1", "Node", "", cordoned, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, true, "spec", "unschedulable")
					labels := u.GetLabels()
					labels["nvidia.com/cuda.driver-version.full"] = f.Releases["r2026-06"].Driver
					u.SetLabels(labels)
				}, nil)
			},
			explain.StepNode, "Node", cordoned, "held by a cordon someone other than gpufleet set", "kubectl uncordon " + cordoned},
		{"a rollout waiting for approval",
			func(t *testing.T) {
				rolloutStatus(t, c, e.Rollout, "WaitingForApproval", map[string]any{"type": "WaitingForApproval", "status": "True", "reason": "CanarySoaked", "message": "canary node h100-0 soaked clean; approve the rollout to go on", "lastTransitionTime": "2026-12-01T00:00:00Z"}, 1)
			},
			explain.StepApproval, "DriverRollout", e.Rollout, "the canary soaked and waits for approval: canary node h100-0 soaked clean", "gpufleet approve r2026-10/prod-h100-a"},
		{"a Kustomization left suspended",
			func(t *testing.T) {
				change(t, c, ks, "Kustomization", "flux-system", "config", func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, true, "spec", "suspend") }, nil)
			},
			explain.StepSuspended, "Kustomization", "config", "the Kustomization is suspended", "flux resume kustomization config"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			tt.breakIt(t)
			a, err := run(t, f, tb.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			_ = explain.WriteText(&text, a, explain.TextOptions{})
			t.Logf("gpufleet explain %s:\n%s", cluster, text.String())
			var broken []explain.Link
			for _, l := range a.Chain {
				if l.State == explain.BrokenState {
					broken = append(broken, l)
				}
			}
			at := a.At
			if a.Verdict != explain.Broken || at == nil || len(broken) != 1 || at.Step != tt.step || at.Object.Kind != tt.kind || at.Object.Name != tt.object {
				t.Fatalf("want exactly %s %s/%s broken; verdict %s, at %+v, broken %+v", tt.step, tt.kind, tt.object, a.Verdict, at, broken)
			}
			if !strings.Contains(at.Message, tt.message) {
				t.Errorf("message %q, want it to say %q", at.Message, tt.message)
			}
			if at.Next != tt.next {
				t.Errorf("next %q, want %q", at.Next, tt.next)
			}
			if v := gateVerdict(t); v != gate.Fail {
				t.Errorf("the gate says %s of what explain finds broken", v)
			}
			checkSchema(t, a)
		})
	}

	t.Run("an unreachable cluster fails closed", func(t *testing.T) {
		kc := gatetest.KubeconfigWithServer(t, tb.Kubeconfig, cluster, "https://"+gatetest.ClosedPort(t))
		a, err := run(t, f, kc)
		var unreadable *explain.UnreadableError
		if !errors.As(err, &unreadable) || a != nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("want an UnreadableError (connection refused) and no answer, got %v, %+v", err, a)
		}
	})
}

// checkSchema validates the answer's JSON against docs/schema/explain.schema.json,
// which programs that show it (a dashboard) rely on.
func checkSchema(t *testing.T, a *explain.Answer) {
	t.Helper()
	var buf bytes.Buffer
	if err := explain.WriteJSON(&buf, a); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../docs/schema/explain.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(abs)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the answer does not follow docs/schema/explain.schema.json: %v", err)
	}
}

// applyRendered gives the arranged Kustomizations the spec and annotations
// render writes for the cluster, keeping their Ready statuses (observed at
// the new generation, as kustomize-controller would).
func applyRendered(t *testing.T, c client.Client, f *fleet.Fleet, e gate.Expected) {
	t.Helper()
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range e.Kustomizations {
		path := "clusters/" + cluster + "/flux-" + name + ".yaml"
		raw, ok := out.Files[path]
		if !ok {
			t.Fatalf("render wrote no %s", path)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rendered := &unstructured.Unstructured{Object: obj}
		if err := edit(t.Context(), c, ks, "Kustomization", "flux-system", name, func(u *unstructured.Unstructured) {
			u.Object["spec"] = rendered.Object["spec"]
			u.SetAnnotations(rendered.GetAnnotations())
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// createSource creates the GitRepository the Kustomizations name, Ready
// with the expected revision fetched.
func createSource(t *testing.T, c client.Client) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
		"spec":     map[string]any{"interval": "1m", "url": "https://git.invalid/fleet.git", "ref": map[string]any{"branch": "main"}},
	}}
	if err := c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{
		"observedGeneration": u.GetGeneration(),
		"artifact":           map[string]any{"path": "gitrepository/flux-system/flux-system/" + rev + ".tar.gz", "url": "http://source-controller/gitrepository/flux-system/flux-system/" + rev + ".tar.gz", "revision": "main@sha1:" + rev, "lastUpdateTime": "2026-12-01T00:00:00Z", "digest": "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
		"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "stored artifact for revision 'main@sha1:" + rev + "'", "lastTransitionTime": "2026-12-01T00:00:00Z"}},
	}
	if err := c.Status().Update(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

// createKustomization creates a Kustomization of another team's (not the
// cluster's own) with the Ready condition given, and deletes it after the
// test.
func createKustomization(t *testing.T, c client.Client, name string, ready map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ks, "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"},
		"spec":     map[string]any{"interval": "10m", "path": "./monitoring/crds", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}},
	}}
	if err := c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(t.Context(), u) })
	u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "conditions": []any{ready}}
	if err := c.Status().Update(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

// rolloutStatus sets the DriverRollout's phase, one condition beside
// Ready, and the nodes done, for one test.
func rolloutStatus(t *testing.T, c client.Client, name, phase string, cond map[string]any, done int64) {
	t.Helper()
	change(t, c, "gpufleet.io/v1alpha1", "DriverRollout", "", name, nil, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, phase, "status", "phase")
		_ = unstructured.SetNestedField(u.Object, done, "status", "nodes", "done")
		conds := []any{map[string]any{"type": "Ready", "status": "False", "reason": phase, "message": "rollout is " + phase, "lastTransitionTime": "2026-12-01T00:00:00Z"}}
		if cond != nil {
			conds = append(conds, cond)
		}
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	})
}

// change edits an object for one test (see edit) and puts its spec side
// and status back when t ends.
func change(t *testing.T, c client.Client, apiVersion, kind, ns, name string, spec, status func(*unstructured.Unstructured)) {
	t.Helper()
	before := &unstructured.Unstructured{}
	before.SetAPIVersion(apiVersion)
	before.SetKind(kind)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, before); err != nil {
		t.Fatal(err)
	}
	if err := edit(t.Context(), c, apiVersion, kind, ns, name, spec, status); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := edit(context.Background(), c, apiVersion, kind, ns, name, func(u *unstructured.Unstructured) {
			if s, ok := before.Object["spec"]; ok {
				u.Object["spec"] = s
			}
			u.SetLabels(maps.Clone(before.GetLabels()))
			u.SetAnnotations(maps.Clone(before.GetAnnotations()))
		}, func(u *unstructured.Unstructured) {
			if s, ok := before.Object["status"]; ok {
				u.Object["status"] = s
			}
		})
		if err != nil {
			t.Errorf("put %s %s back: %v", kind, name, err)
		}
	})
}

// edit changes an object's spec side (spec, labels, annotations), then its
// status, as its controllers would have: a spec edit is observed at the
// new generation where the object records one.
func edit(ctx context.Context, c client.Client, apiVersion, kind, ns, name string, spec, status func(*unstructured.Unstructured)) error {
	if spec != nil {
		if err := testbed.Update(ctx, c, apiVersion, kind, ns, name, false, spec); err != nil {
			return err
		}
	}
	if kind == "Node" && status == nil {
		return nil
	}
	return testbed.Update(ctx, c, apiVersion, kind, ns, name, true, func(u *unstructured.Unstructured) {
		if status != nil {
			status(u)
		}
		if _, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); ok {
			_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
		}
	})
}
