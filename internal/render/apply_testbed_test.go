package render_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// TestManifestsApplyLikeFlux applies what render writes in the manifests
// mode — every GPU Operator chart version of ../shared/operators rendered to
// plain objects, the Network Operator's, and gpufleet's own NVIDIADrivers —
// to a real kube-apiserver the way Flux's kustomize-controller does: server-
// side apply with its field manager, CRDs first. The API server refuses
// under server-side apply what a plain create accepts (the ClusterPolicy's
// null fields were the first such case), so only this finds it.
//
// Each version is applied a second time as a cluster adopted with its
// driver managed by the ClusterPolicy (driver-management = "clusterpolicy",
// the gpu-operator actuator, a generated release name in a namespace of its
// own): the chart in ClusterPolicy mode at the release's driver, with the
// operator's upgrade policy, both at rest and while a rollout moves the
// driver, and the config step's record instead of NVIDIADrivers.
func TestManifestsApplyLikeFlux(t *testing.T) {
	ops := sharedtest.Operators(t)
	gpuVersions := versionsIn(t, filepath.Join(ops, "gpu-operator"))
	netVersions := versionsIn(t, filepath.Join(ops, "network-operator"))
	tb := testbed.New(t, testbed.Options{})
	c := tb.Clusters()[0]
	ctx := t.Context()
	src := &charts.FolderSource{Dir: ops}

	rollout := func(s string) string {
		return strings.Replace(s, "stable = \"r\"\n", "stable = \"r\"\nrollout = { release = \"r2\", wave = \"staging\" }\n", 1)
	}
	variants := []struct {
		name string
		edit func(string) string
	}{
		{"", func(s string) string { return s }},
		{" clusterpolicy", func(s string) string { return s + applyAdoptedClusterPolicy }},
		{" clusterpolicy rolling out", func(s string) string { return rollout(s) + applyAdoptedClusterPolicy }},
	}
	for i, gpu := range gpuVersions {
		net := netVersions[min(i, len(netVersions)-1)]
		for _, v := range variants {
			t.Run("gpu-operator "+gpu+v.name, func(t *testing.T) {
				f, err := fleet.Parse("fleet.toml", []byte(v.edit(fmt.Sprintf(applyFleet, gpu, net, gpu, net))))
				if err != nil {
					t.Fatal(err)
				}
				applyLikeFlux(ctx, t, c.Client, renderedSteps(ctx, t, f, src))
			})
		}
	}
}

// renderedSteps renders f in the manifests mode from the charts of src and
// returns the objects of cluster stg's operators and config steps.
func renderedSteps(ctx context.Context, t *testing.T, f *fleet.Fleet, src charts.Source) []*unstructured.Unstructured {
	t.Helper()
	out, err := render.RenderWith(f, render.Options{Charts: charts.Renderer{Ctx: ctx, Src: src}})
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, dir := range []string{"operators", "config"} {
		prefix := "clusters/stg/" + dir + "/"
		paths := slices.Sorted(func(yield func(string) bool) {
			for p := range out.Files {
				if strings.HasPrefix(p, prefix) && strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, "kustomization.yaml") {
					if !yield(p) {
						return
					}
				}
			}
		})
		for _, p := range paths {
			docs, err := crdcheck.DecodeObjects(out.Files[p])
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			objs = append(objs, docs...)
		}
	}
	return objs
}

// applyLikeFlux applies objs as kustomize-controller would: CRDs and
// namespaces for real, then, once the CRDs are established, everything else
// as a server-side dry run (the objects of one version need not run).
func applyLikeFlux(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	var crds []string
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, o.GetName())
			fallthrough
		case "Namespace":
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kustomize-controller"), client.ForceOwnership); err != nil {
				t.Errorf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		default:
			rest = append(rest, o)
		}
	}
	for _, name := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", name, err)
		}
	}
	applied := 0
	for _, o := range rest {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kustomize-controller"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Errorf("server-side apply of %s %s/%s refused: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			continue
		}
		applied++
	}
	t.Logf("%d CRDs and %d objects applied server-side", len(crds), applied)
	if applied == 0 {
		t.Error("nothing was applied")
	}
}

// versionsIn lists the version folders of dir, oldest first.
func versionsIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no charts in %s: %v", dir, err)
	}
	var vs []string
	for _, e := range entries {
		if _, err := versions.Parse(e.Name()); err == nil {
			vs = append(vs, e.Name())
		}
	}
	slices.SortFunc(vs, func(a, b string) int { return versions.MustParse(a).Compare(versions.MustParse(b)) })
	if len(vs) == 0 {
		t.Skipf("no chart versions in %s", dir)
	}
	return vs
}

// applyFleet is a one-cluster fleet in the manifests mode, with a pool
// that uses MIG (the operator's MIG manager objects are rendered too). r2
// is r with another driver.
const applyFleet = `
[charts]
mode = "manifests"

[releases.r]
gpu-operator = %q
network-operator = %q
driver = "580.95.05"

[releases.r2]
gpu-operator = %q
network-operator = %q
driver = "580.105.08"

[clusters.stg]
environment = "staging"

[[clusters.stg.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2

[[clusters.stg.pools]]
name = "a100"
product = "NVIDIA-A100-SXM4-80GB"
nodes = 2
mig = "all-1g.10gb"

[[waves]]
name = "staging"
clusters = ["stg"]

[promotion]
stable = "r"
`

// applyAdoptedClusterPolicy adopts stg as gpufleet init finds a default
// Helm install, its driver managed by the ClusterPolicy.
const applyAdoptedClusterPolicy = `
[clusters.stg.gpu-operator]
release = "gpu-operator-1712345678"
namespace = "nvidia-gpu-operator"
driver-management = "clusterpolicy"

[policy]
actuator = "gpu-operator"
`
