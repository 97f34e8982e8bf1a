package testbed

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// TestControllerFromDeployment: the controller's install as render writes
// it, applied to a real API server, runs as the process its Deployment
// says, with the rights of the rendered RBAC (it takes its leader-election
// lease as the service account); a new image replaces it, and the new
// process takes the lease over; deleting the Deployment stops it.
func TestControllerFromDeployment(t *testing.T) {
	tb := New(t, Options{Kube: true, Kwok: true})
	c := tb.Clusters()[0]
	ctx := t.Context()

	bin, err := BuildController("../../..")
	if err != nil {
		t.Fatal(err)
	}
	apply := func(version string) {
		t.Helper()
		src := strings.ReplaceAll(controllerFleet, "VERSION", version)
		f, err := fleet.Parse("fleet.toml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		out, err := render.Render(f)
		if err != nil {
			t.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(out.Files["clusters/x/operators/"+render.ControllerFile]), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatal(err)
			}
			if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	apply("v0.9.0")
	ctl := c.RunControllerFromDeployment(ctx, ControllerOptions{Binary: bin,
		Flags: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms"}},
		func(err error) { t.Error(err) })
	holder := func() string {
		l := &coordinationv1.Lease{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: "gpufleet-controller.gpufleet.io"}, l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	waitFor(ctx, t, "the controller started and leading", func() (bool, string) {
		return len(ctl.Starts()) == 1 && holder() != "", fmt.Sprintf("%d starts, lease held by %q\n%s", len(ctl.Starts()), holder(), ctl.LogTail(10))
	})
	first := ctl.Starts()[0]
	if first.Image != "registry.internal.example/gpufleet-controller:v0.9.0" || !slices.Contains(first.Args, "--leader-elect") || !slices.Contains(first.Args, "--zap-encoder=json") {
		t.Errorf("start %+v: not the rendered Deployment's image and arguments", first)
	}
	firstHolder := holder()

	apply("v0.10.0")
	waitFor(ctx, t, "the new version replaced the old and took the lease", func() (bool, string) {
		s := ctl.Starts()
		return len(s) == 2 && s[1].Image == "registry.internal.example/gpufleet-controller:v0.10.0" && holder() != "" && holder() != firstHolder,
			fmt.Sprintf("%d starts, lease held by %q", len(s), holder())
	})

	if err := c.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: config.Namespace, Name: config.Deployment}}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the process stopped with its Deployment", func() (bool, string) { return !ctl.Running(), "running" })
}

const controllerFleet = `
[controller]
image = "registry.internal.example/gpufleet-controller"
[releases.r1]
gpu-operator = "v25.3.4"
driver = "570.172.08"
controller = "VERSION"
[clusters.x]
environment = "staging"
[[clusters.x.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 1
[[waves]]
name = "all"
clusters = ["x"]
[promotion]
stable = "r1"
`
