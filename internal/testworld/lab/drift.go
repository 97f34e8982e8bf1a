package lab

import (
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// measureDrift edits the lifecycle Kustomization's interval by hand (the
// root Kustomization applies it from clusters/<cluster>/flux-lifecycle.yaml)
// and measures how long Flux takes to put it back. The edit falls at an
// arbitrary point of the root Kustomization's interval, so the repair takes
// on average half the root interval plus the apply time, and at most the
// root interval plus the apply time. The apply time is measured afterwards, as the time
// the root Kustomization takes to handle a reconcile request.
func measureDrift(w *Play, cluster string) {
	ctx := w.Context()
	rootInterval := w.rootInterval
	c := w.Client(cluster)
	const want = "2m0s"
	if err := testbed.Update(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", testbed.FluxNamespace, "lifecycle", false, func(u *unstructured.Unstructured) {
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "interval"); got != want {
			w.T.Fatalf("lifecycle interval is %s before the edit, want %s", got, want)
		}
		_ = unstructured.SetNestedField(u.Object, "1h0m0s", "spec", "interval")
	}); err != nil {
		w.T.Fatal(err)
	}
	edited := time.Now()
	w.Eventually(2*rootInterval+30*time.Second, "Flux to restore the lifecycle Kustomization's interval", func() (bool, string) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "lifecycle"}, ks); err != nil {
			return false, err.Error()
		}
		return ks.Spec.Interval.Duration.String() == want, ks.Spec.Interval.Duration.String()
	})
	repair := time.Since(edited)

	root := client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "flux-system"}
	token := time.Now().Format(time.RFC3339Nano)
	t0 := time.Now()
	if err := testbed.Update(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", root.Namespace, root.Name, false, func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["reconcile.fluxcd.io/requestedAt"] = token
		u.SetAnnotations(ann)
	}); err != nil {
		w.T.Fatal(err)
	}
	w.Eventually(time.Minute, "the root Kustomization to handle a reconcile request", func() (bool, string) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, root, ks); err != nil {
			return false, err.Error()
		}
		return ks.Status.LastHandledReconcileAt == token, ks.Status.LastHandledReconcileAt
	})
	apply := time.Since(t0)

	bound := rootInterval + apply + 5*time.Second
	w.Note("drift repaired in %s; root interval %s, apply time %s: expected on average interval/2 + apply = %s, at most interval + apply = %s",
		repair.Round(10*time.Millisecond), rootInterval, apply.Round(10*time.Millisecond), (rootInterval/2 + apply).Round(10*time.Millisecond), (rootInterval + apply).Round(10*time.Millisecond))
	if repair > bound {
		w.T.Errorf("drift repaired in %s, more than interval + apply time + 5s slack (%s)", repair, bound)
	}
}

// kustomizationReadyAt reports whether cluster's Kustomization name is
// Ready with revision applied.
func kustomizationReadyAt(w *Play, cluster, name, revision string) bool {
	ks := &kustomizev1.Kustomization{}
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, ks); err != nil {
		return false
	}
	return ks.Status.LastAppliedRevision == revision && apimeta.IsStatusConditionTrue(ks.Status.Conditions, "Ready")
}
