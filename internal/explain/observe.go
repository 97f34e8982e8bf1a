package explain

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/gate"
)

// Observed is what explain read: what the gate reads (gate.Observe), and
// the objects around it the gate does not judge.
type Observed struct {
	gate.Observed
	// Sources are the Flux sources the Kustomizations name, by
	// "namespace/name"; nil when missing.
	Sources map[string]*unstructured.Unstructured
	// Dependencies are the Kustomizations named in a dependsOn that are
	// not among the cluster's own (gate.Expected.Kustomizations), by
	// "namespace/name"; nil when missing.
	Dependencies map[string]*unstructured.Unstructured
	// DriverDaemonSets and DriverPods are the GPU Operator's driver
	// DaemonSets and their pods in its namespace.
	DriverDaemonSets []appsv1.DaemonSet
	DriverPods       []corev1.Pod
}

// gvkGitRepository is the one custom kind explain reads that the gate
// does not judge (the Kustomizations' source); every other is the gate's
// (gate.ReadKinds).
var gvkGitRepository = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

// driverPodComponent is the label value the GPU Operator gives its driver
// pods (app.kubernetes.io/component), the one the lifecycle controller
// selects them by (controller.DefaultDriverPodSelector).
const driverPodComponent = "nvidia-driver"

// observe reads the cluster. Absent objects are nil; any other failure is
// an error, since explain could not find out.
func observe(ctx context.Context, c client.Reader, e gate.Expected) (Observed, error) {
	g, err := gate.Observe(ctx, c, e)
	if err != nil {
		return Observed{}, err
	}
	o := Observed{Observed: g, Sources: map[string]*unstructured.Unstructured{}, Dependencies: map[string]*unstructured.Unstructured{}}
	get := func(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); {
		case err == nil:
			return u, nil
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			return nil, nil
		default:
			return nil, fmt.Errorf("read %s %s/%s: %w", gvk.Kind, ns, name, err)
		}
	}
	if err := gitopsLinksFor(e).observe(&o, e, get); err != nil {
		return o, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(e.GPUOperatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": driverPodComponent}); err != nil {
		return o, fmt.Errorf("list driver pods: %w", err)
	}
	o.DriverPods = pods.Items
	// gate.ClientFor's scheme has no apps kinds: read them unstructured.
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DaemonSetList"))
	if err := c.List(ctx, list, client.InNamespace(e.GPUOperatorNamespace)); err != nil {
		return o, fmt.Errorf("list DaemonSets: %w", err)
	}
	var dss appsv1.DaemonSetList
	for _, u := range list.Items {
		var ds appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ds); err != nil {
			return o, fmt.Errorf("DaemonSet %s: %w", u.GetName(), err)
		}
		dss.Items = append(dss.Items, ds)
	}
	owners := map[string]bool{}
	for _, p := range pods.Items {
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" {
				owners[ref.Name] = true
			}
		}
	}
	for _, ds := range dss.Items {
		if owners[ds.Name] || ds.Spec.Template.Labels["app.kubernetes.io/component"] == driverPodComponent {
			o.DriverDaemonSets = append(o.DriverDaemonSets, ds)
		}
	}
	return o, nil
}

const fluxNamespace = gate.FluxNamespace

type ref struct{ Kind, Namespace, Name string }

// sourceOf is a Kustomization's spec.sourceRef, its namespace defaulted
// to the Kustomization's as Flux does.
func sourceOf(k *unstructured.Unstructured) ref {
	m, _, _ := unstructured.NestedStringMap(k.Object, "spec", "sourceRef")
	r := ref{Kind: m["kind"], Namespace: m["namespace"], Name: m["name"]}
	if r.Namespace == "" {
		r.Namespace = k.GetNamespace()
	}
	return r
}

// dependsOn lists a Kustomization's spec.dependsOn, namespaces defaulted.
func dependsOn(k *unstructured.Unstructured) []ref {
	list, _, _ := unstructured.NestedSlice(k.Object, "spec", "dependsOn")
	var out []ref
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if ns == "" {
			ns = k.GetNamespace()
		}
		out = append(out, ref{Kind: "Kustomization", Namespace: ns, Name: name})
	}
	return out
}
