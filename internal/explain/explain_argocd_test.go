package explain_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/explain"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// noCharts renders each chart to nothing: the stand-in folders below hold
// no operator.
type noCharts struct{}

func (noCharts) RenderChart(string, string, string, string, map[string]any) ([]byte, error) {
	return nil, nil
}

// TestExplainWithRealArgoCD reads statuses the real Argo CD wrote (the
// application-controller and repo-server of the testbed), not arranged
// ones: the sync results, retry messages and health messages explain reads
// are Argo CD's own. Cluster stg of render's Argo CD fixture runs the
// Applications render writes for it (their spec as rendered, their source
// a stand-in folder of the testbed's git server): the root Application
// applies the health checks render writes into argocd-cm; gpu-stack
// applies an NVIDIADriver in wave 1 and a DriverRollout in wave 2, as the
// config and lifecycle steps do. Then, in turn: an invalid NVIDIADriver
// the API server refuses, a DriverRollout whose controller says it
// stalled, and a commit pushed to another branch, each the first broken
// link.
func TestExplainWithRealArgoCD(t *testing.T) {
	const stg = "stg"
	f, err := fleet.Load("../render/testdata/argocd/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	operatorCRDs := "../../../shared/operators/gpu-operator/v25.3.4/deployments/gpu-operator/crds"
	if _, err := os.Stat(operatorCRDs); err != nil {
		t.Skipf("needs the real GPU Operator's CRDs in ../shared/operators: %v", err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{stg}, ArgoCD: []string{stg}, Git: true, Kube: true,
		CRDDirs: []string{operatorCRDs, "../../config/crd/bases"}})
	ctx := t.Context()
	c := tb.Cluster(stg)
	repo, err := tb.Git.NewRepo("fleet.git", "main", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.RenderWith(f, render.Options{Charts: noCharts{}})
	if err != nil {
		t.Fatal(err)
	}
	dr := string(out.Files["clusters/stg/lifecycle/driverrollout.yaml"])
	nvidiaDriver := func(driverType string) string {
		return fmt.Sprintf("apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata:\n  name: h100-580-95-05\n  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\nspec:\n  driverType: %s\n  image: driver\n  repository: nvcr.io/nvidia\n  version: 580.95.05\n", driverType)
	}
	kustomization := func(files ...string) string {
		return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + strings.Join(files, "\n- ") + "\n"
	}
	files := map[string]string{
		"stand/root/kustomization.yaml":  kustomization("argocd-cm.yaml"),
		"stand/root/argocd-cm.yaml":      string(out.Files["clusters/stg/argocd/argocd-cm.yaml"]),
		"stand/stack/kustomization.yaml": kustomization("nvidiadriver.yaml", "driverrollout.yaml"),
		"stand/stack/nvidiadriver.yaml":  nvidiaDriver("cuda"),
		"stand/stack/driverrollout.yaml": dr,
	}
	first, err := repo.CommitFiles(files, "the stand-in steps")
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []struct{ file, path string }{{"application-gpufleet.yaml", "stand/root"}, {"application-gpu-stack.yaml", "stand/stack"}} {
		var obj map[string]any
		if err := yaml.Unmarshal(out.Files["clusters/stg/argocd/"+app.file], &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		_ = unstructured.SetNestedField(u.Object, repo.URL, "spec", "source", "repoURL")
		_ = unstructured.SetNestedField(u.Object, app.path, "spec", "source", "path")
		if u.GetName() == render.ArgoCDStackApp {
			// The rendered project: created here, as the root Application
			// would from argocd/.
			_ = unstructured.SetNestedField(u.Object, "default", "spec", "project")
		}
		if err := c.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	explainAt := func(t *testing.T, rev string) *explain.Answer {
		t.Helper()
		a, err := explain.Options{Fleet: f, Cluster: stg, Revision: rev, Kubeconfig: tb.Kubeconfig, Timeout: 20 * time.Second}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// until explains rev until the first broken link is on gpu-stack and
	// ok says it is the one wanted, or fails after a minute.
	until := func(t *testing.T, rev string, ok func(l *explain.Link) bool) *explain.Answer {
		t.Helper()
		var a *explain.Answer
		deadline := time.Now().Add(time.Minute)
		for {
			a = explainAt(t, rev)
			if a.At != nil && a.At.Object.Name == render.ArgoCDStackApp && ok(a.At) {
				return a
			}
			if time.Now().After(deadline) {
				t.Fatalf("explain did not get there in a minute: %s\n%s", a.Summary, c.ArgoCD.LogTail(20))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	t.Run("a sync failed because of an invalid object", func(t *testing.T) {
		// The root Application syncs the folder that holds it too: wait
		// for that sync to end as well, or a loaded machine sees it still
		// running beside the broken child.
		a := until(t, first, func(l *explain.Link) bool { return l.Step == explain.StepSync && l.State == explain.BrokenState })
		for deadline := time.Now().Add(time.Minute); a.Chain[0].State != explain.OK && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			a = until(t, first, func(l *explain.Link) bool { return l.Step == explain.StepSync && l.State == explain.BrokenState })
		}
		if !strings.Contains(a.At.Message, "NVIDIADriver/h100-580-95-05") || !strings.Contains(a.At.Message, "driverType") {
			t.Errorf("message %q: want the NVIDIADriver and the API server's word on driverType", a.At.Message)
		}
		if a.Chain[0].Object.Name != render.ArgoCDRootApp || a.Chain[0].State != explain.OK {
			t.Errorf("the root Application: %+v", a.Chain[0])
		}
		t.Logf("explain: %s\nnext: %s", a.Summary, a.At.Next)
	})

	files["stand/stack/nvidiadriver.yaml"] = nvidiaDriver("gpu")
	fixed, err := repo.CommitFiles(files, "a valid NVIDIADriver")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a health check failing on a DriverRollout", func(t *testing.T) {
		// Argo CD retries the failed sync with the latest commit: the fix
		// is applied without a new sync being asked for. Neither the GPU
		// Operator nor gpufleet-controller runs here: the test writes what
		// each writes, the operator's state of the NVIDIADriver (which wave
		// 1 waits for) and the controller's of a rollout that stalled
		// (which wave 2 waits for).
		nd := &unstructured.Unstructured{}
		nd.SetAPIVersion(v1alpha1.NVIDIADriverAPIVersion)
		nd.SetKind(v1alpha1.KindNVIDIADriver)
		ro := &v1alpha1.DriverRollout{}
		wait := func(what string, obj client.Object, name string) {
			deadline := time.Now().Add(90 * time.Second)
			for c.Client.Get(ctx, client.ObjectKey{Name: name}, obj) != nil {
				if time.Now().After(deadline) {
					t.Fatalf("Argo CD did not apply the %s of %s in 90 s:\n%s", what, fixed[:12], c.ArgoCD.LogTail(20))
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		wait("NVIDIADriver", nd, "h100-580-95-05")
		_ = unstructured.SetNestedField(nd.Object, "notReady", "status", "state")
		if err := c.Client.Status().Update(ctx, nd); err != nil {
			t.Fatal(err)
		}
		wait("DriverRollout", ro, "r2")
		ro.Status.ObservedGeneration = ro.Generation
		ro.Status.Phase = v1alpha1.PhaseStalled
		ro.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "BudgetExhausted", Message: "1 node failed, more than the failure budget of 0: nothing more starts", LastTransitionTime: metav1.Now()}}
		if err := c.Client.Status().Update(ctx, ro); err != nil {
			t.Fatal(err)
		}
		a := until(t, fixed, func(l *explain.Link) bool { return l.Step == explain.StepHealthCheck && l.State == explain.BrokenState })
		if want := "health Degraded: DriverRollout/r2 is Degraded: Stalled: 1 node failed"; !strings.Contains(a.At.Message, want) {
			t.Errorf("message %q, want %q", a.At.Message, want)
		}
		if a.At.Next != "kubectl describe driverrollout.gpufleet.io r2" {
			t.Errorf("next %q", a.At.Next)
		}
		t.Logf("explain: %s", a.Summary)
	})

	t.Run("an Application not synced: the expected commit is not on its branch yet", func(t *testing.T) {
		unpushed := "fedcba9876543210fedcba9876543210fedcba98"
		a := explainAt(t, unpushed)
		if a.At == nil || a.At.Object.Kind != "Application" || a.At.Object.Name != render.ArgoCDRootApp || a.At.Step != explain.StepRevision {
			t.Fatalf("want the root Application's revision, got %+v", a.At)
		}
		if want := "Argo CD has synced " + fixed[:12] + ", not the expected " + unpushed[:12]; !strings.Contains(a.At.Message, want) {
			t.Errorf("message %q, want %q", a.At.Message, want)
		}
		if want := "kubectl -n argocd annotate application gpufleet argocd.argoproj.io/refresh=normal --overwrite"; a.At.Next != want {
			t.Errorf("next %q, want %q", a.At.Next, want)
		}
		for _, l := range a.Chain {
			if l.Object.Name == render.ArgoCDStackApp && l.State != explain.Blocked {
				t.Errorf("gpu-stack is %s, want blocked behind the root Application", l.State)
			}
		}
		t.Logf("explain: %s\nnext: %s", a.Summary, a.At.Next)
	})
}
