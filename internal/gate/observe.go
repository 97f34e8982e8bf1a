package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/dra"
)

// errUnreadable marks a read that failed for another reason than absence:
// the gate cannot judge, so the check is Unknown rather than Fail.
var errUnreadable = errors.New("could not read")

// Observe reads what Evaluate needs from one cluster. A missing object (or
// a kind the cluster does not know) is recorded as nil; any other error
// aborts, because the gate could not find out.
func Observe(ctx context.Context, c client.Reader, e Expected) (Observed, error) {
	o := Observed{
		Kustomizations: map[string]*unstructured.Unstructured{},
		Applications:   map[string]*unstructured.Unstructured{},
		HelmReleases:   map[string]*unstructured.Unstructured{},
		Deployments:    map[string]*unstructured.Unstructured{},
		NVIDIADrivers:  map[string]*unstructured.Unstructured{},
	}
	get := func(k ReadKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
		u := k.Object().(*unstructured.Unstructured)
		err := c.Get(ctx, key, u)
		switch {
		case err == nil:
			return u, nil
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			return nil, nil
		default:
			return nil, fmt.Errorf("%w %s %s: %w", errUnreadable, k.GVK.Kind, key, err)
		}
	}
	for _, name := range e.Kustomizations {
		u, err := get(KindKustomization, client.ObjectKey{Namespace: FluxNamespace, Name: name})
		if err != nil {
			return o, err
		}
		o.Kustomizations[name] = u
	}
	for _, name := range e.Applications {
		u, err := get(KindApplication, client.ObjectKey{Namespace: ArgoCDNamespace, Name: name})
		if err != nil {
			return o, err
		}
		o.Applications[name] = u
	}
	for key := range e.HelmReleases {
		ns, name := cutKey(key)
		u, err := get(KindHelmRelease, client.ObjectKey{Namespace: ns, Name: name})
		if err != nil {
			return o, err
		}
		o.HelmReleases[key] = u
	}
	for key := range e.OperatorDeployments {
		ns, name := cutKey(key)
		u, err := get(KindDeployment, client.ObjectKey{Namespace: ns, Name: name})
		if err != nil {
			return o, err
		}
		o.Deployments[key] = u
	}
	if e.ControllerImage != "" {
		u, err := get(KindDeployment, client.ObjectKey{Namespace: config.Namespace, Name: config.Deployment})
		if err != nil {
			return o, err
		}
		o.Controller = u
	}
	for _, name := range e.NVIDIADrivers {
		u, err := get(KindNVIDIADriver, client.ObjectKey{Name: name})
		if err != nil {
			return o, err
		}
		o.NVIDIADrivers[name] = u
	}
	// The GPU Operator makes one ClusterPolicy; its name is the chart's choice.
	policies := KindClusterPolicy.list()
	switch err := c.List(ctx, policies); {
	case err == nil:
		if len(policies.Items) > 0 {
			o.ClusterPolicy = &policies.Items[0]
		}
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
	default:
		return o, fmt.Errorf("%w ClusterPolicies: %w", errUnreadable, err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return o, fmt.Errorf("%w nodes: %w", errUnreadable, err)
	}
	o.Nodes = nodes.Items
	// A cluster that does not serve resource.k8s.io/v1 (before Kubernetes
	// 1.34, or with DRA turned off) has no slices: the labels alone say.
	var slices resourcev1.ResourceSliceList
	switch err := c.List(ctx, &slices); {
	case err == nil:
		o.DRA = dra.Nodes(slices.Items, v1alpha1.DRADriverGPU)
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
	default:
		return o, fmt.Errorf("%w ResourceSlices: %w", errUnreadable, err)
	}
	dr := &v1alpha1.DriverRollout{}
	switch err := c.Get(ctx, client.ObjectKey{Name: e.Rollout}, dr); {
	case err == nil:
		o.Rollout = dr
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	default:
		return o, fmt.Errorf("%w DriverRollout %s: %w", errUnreadable, e.Rollout, err)
	}
	return o, nil
}

// cutKey splits a "namespace/name" key; a key without a slash is a name.
func cutKey(key string) (ns, name string) {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return ns, name
	}
	return "", key
}
