package render_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/admission"
	"github.com/gpufleet/gpufleet/internal/admission/admissiontest"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// admissionWorld is a real API server with the admission policies render
// writes into a cluster's operators step (and the DriverRollout CRD)
// applied, and clients for the controller's service account and for
// someone else. Both carry system:masters, so RBAC lets everything through
// and what is refused is refused by the policies; the controller's own
// RBAC is the controller suite's business (internal/controller).
type admissionWorld struct {
	admin, controller, someone client.Client
	f                          *fleet.Fleet
}

func newAdmissionWorld(t *testing.T) *admissionWorld {
	t.Helper()
	f, err := fleet.Load("testdata/controller/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := crdcheck.DecodeObjects(out.Files["clusters/stg/operators/"+render.ControllerFile])
	if err != nil {
		t.Fatal(err)
	}
	scheme := testbed.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Options{Scheme: scheme})
	cl := tb.Clusters()[0]
	ctx := t.Context()
	policies := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			continue
		}
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			policies++
		}
		if err := cl.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kustomize-controller"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if policies != 4 {
		t.Fatalf("the rendered install has %d admission policies and bindings, want 4", policies)
	}
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(cl.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w := &admissionWorld{admin: cl.Client, controller: as(admission.ControllerUser), someone: as("jane"), f: f}
	// Established is not enough: a create can still meet "no matches for
	// kind" until the API server's discovery serves the new kind, which is
	// what envtest waits for.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: "driverrollouts." + v1alpha1.GroupVersion.Group}, crd); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(cl.Config, []*apiextensionsv1.CustomResourceDefinition{crd},
		envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("CRD %s not served: %v", crd.Name, err)
	}
	return w
}

// untilRefused tries do until the API server refuses it (a policy is
// enforced once the API server has loaded it, a moment after the apply),
// undoing each attempt that went through.
func untilRefused(t *testing.T, what string, do func() error, undo func()) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := do()
		if apierrors.IsForbidden(err) {
			return
		}
		if err == nil {
			undo()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not refused after 30 s (last: %v)", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestNodePolicyOnTheAPIServer applies the node policy render writes to a
// real kube-apiserver and plays admissiontest's table there: each label
// only the controller writes, added, changed or removed on an existing
// node and carried by a new one, by someone else (refused, but for the
// exceptions it allows) and by the controller (allowed); labels nobody
// guards, allowed. The same table is evaluated in process by
// internal/admission's tests.
func TestNodePolicyOnTheAPIServer(t *testing.T) {
	w := newAdmissionWorld(t)
	ctx := t.Context()
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{v1alpha1.LabelPhase: "Done"}}}
	untilRefused(t, "someone else creating a node with "+v1alpha1.LabelPhase,
		func() error { return w.someone.Create(ctx, probe.DeepCopy()) },
		func() { _ = w.admin.Delete(ctx, probe) })

	for i, c := range admissiontest.NodeCases() {
		t.Run(c.Name, func(t *testing.T) {
			name := fmt.Sprintf("node-%03d", i)
			by := w.someone
			if c.Controller {
				by = w.controller
			}
			var err error
			if c.Before == nil {
				err = by.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.After}})
			} else {
				// The node as it is before: the controller may write it.
				if err := w.controller.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.Before}}); err != nil {
					t.Fatalf("arrange: %v", err)
				}
				n := &corev1.Node{}
				if err := w.admin.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
					t.Fatal(err)
				}
				n.Labels = maps.Clone(c.After)
				err = by.Update(ctx, n)
			}
			t.Cleanup(func() {
				_ = w.admin.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
			})
			switch {
			case c.Refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.Refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.Refused)):
				t.Fatalf("got %v, want a refusal saying %q", err, c.Refused)
			}
			want := c.After
			if c.Refused != "" {
				want = c.Before
			}
			got := &corev1.Node{}
			if err := w.admin.Get(ctx, client.ObjectKey{Name: name}, got); err != nil && !(want == nil && apierrors.IsNotFound(err)) {
				t.Fatal(err)
			}
			if !maps.Equal(got.Labels, want) {
				t.Errorf("labels %v, want %v", got.Labels, want)
			}
		})
	}

	// The API server takes a node's labels through its status subresource
	// too (a policy on "nodes" alone let this request change the label):
	// a label changed through it is refused alike.
	t.Run("someone else changes a label through nodes/status", func(t *testing.T) {
		const name = "status-node"
		before := map[string]string{v1alpha1.LabelPhase: string(v1alpha1.NodeSoaking)}
		if err := w.controller.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: before}}); err != nil {
			t.Fatal(err)
		}
		n := &corev1.Node{}
		if err := w.admin.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels[v1alpha1.LabelPhase] = string(v1alpha1.NodeDone)
		err := w.someone.Status().Update(ctx, n)
		if err := w.admin.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not write node label "+v1alpha1.LabelPhase) {
			t.Errorf("got %v, want a refusal", err)
		}
		if !maps.Equal(n.Labels, before) {
			t.Errorf("labels %v after someone else's status update, want %v", n.Labels, before)
		}
	})
}

// TestRolloutStatusPolicyOnTheAPIServer: a DriverRollout's status is
// written by the controller's service account alone; its spec, by whoever
// RBAC lets (Flux).
func TestRolloutStatusPolicyOnTheAPIServer(t *testing.T) {
	w := newAdmissionWorld(t)
	ctx := t.Context()
	ro, err := render.DriverRollout(w.f, "stg", w.f.Promotion.Stable)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.admin.Create(ctx, ro); err != nil {
		t.Fatal(err)
	}
	setPhase := func(c client.Client, phase v1alpha1.RolloutPhase) error {
		got := &v1alpha1.DriverRollout{}
		if err := w.admin.Get(ctx, client.ObjectKeyFromObject(ro), got); err != nil {
			return err
		}
		got.Status.Phase = phase
		return c.Status().Update(ctx, got)
	}
	untilRefused(t, "someone else writing a DriverRollout's status",
		func() error { return setPhase(w.someone, v1alpha1.PhaseCompleted) },
		func() {})
	if err := setPhase(w.someone, v1alpha1.PhaseCompleted); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "jane may not write its status: only gpufleet-controller") {
		t.Errorf("someone else's status write: %v", err)
	}
	if err := setPhase(w.controller, v1alpha1.PhaseProgressing); err != nil {
		t.Errorf("the controller's status write: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DriverRollout"))
	if err := w.admin.Get(ctx, client.ObjectKeyFromObject(ro), got); err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != string(v1alpha1.PhaseProgressing) {
		t.Errorf("status.phase %q, want the controller's %s", phase, v1alpha1.PhaseProgressing)
	}
	// The spec is not the policy's: Flux applies it.
	spec := &v1alpha1.DriverRollout{}
	if err := w.admin.Get(ctx, client.ObjectKeyFromObject(ro), spec); err != nil {
		t.Fatal(err)
	}
	spec.Spec.Paused = !spec.Spec.Paused
	if err := w.someone.Update(ctx, spec); err != nil {
		t.Errorf("someone else's spec update: %v", err)
	}
}
