package gate

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/render"
)

// ReadKind is a kind of object the gate reads from a cluster (Observe).
// ReadKinds is the one list of them: the gate's REST mapper, the
// dashboard's informers and explain's reads all take it from here, so a
// kind the gate starts to read is watched and mapped with it.
type ReadKind struct {
	GVK schema.GroupVersionKind
	// Resource is the kind's plural resource name.
	Resource string
	// Namespaced says its objects live in a namespace.
	Namespaced bool
}

// The kinds the gate reads. Flux's and the GPU Operator's are read
// unstructured (their Go types would pull in their modules); Nodes and
// DriverRollouts and ResourceSlices typed (Scheme).
var (
	KindKustomization = ReadKind{schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}, "kustomizations", true}
	KindApplication   = ReadKind{schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}, "applications", true}
	KindHelmRelease   = ReadKind{schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}, "helmreleases", true}
	KindDeployment    = ReadKind{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true}
	KindClusterPolicy = ReadKind{schema.FromAPIVersionAndKind(v1alpha1.ClusterPolicyAPIVersion, v1alpha1.KindClusterPolicy), "clusterpolicies", false}
	KindNVIDIADriver  = ReadKind{schema.FromAPIVersionAndKind(v1alpha1.NVIDIADriverAPIVersion, v1alpha1.KindNVIDIADriver), "nvidiadrivers", false}
	KindNode          = ReadKind{corev1.SchemeGroupVersion.WithKind("Node"), "nodes", false}
	KindDriverRollout = ReadKind{v1alpha1.GroupVersion.WithKind(v1alpha1.KindDriverRollout), "driverrollouts", false}
	// KindResourceSlice is dynamic resource allocation's (GA in Kubernetes
	// 1.34): the GPU DRA driver's slices say which driver a node runs.
	KindResourceSlice = ReadKind{resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"), "resourceslices", false}
)

// ReadKinds are every kind the gate may read.
func ReadKinds() []ReadKind {
	return []ReadKind{KindKustomization, KindApplication, KindHelmRelease, KindDeployment, KindClusterPolicy, KindNVIDIADriver, KindNode, KindResourceSlice, KindDriverRollout}
}

// Reads are the kinds Observe reads for e: the GitOps engine's (its
// gitopsExpectation), HelmReleases only in the
// helmrelease chart mode, Deployments only in the manifests mode or for
// the controller's,
// NVIDIADrivers only where the release has some.
func Reads(e Expected) []ReadKind {
	out := gitopsExpectations.For(e.Engine).reads(e)
	if len(e.HelmReleases) > 0 {
		out = append(out, KindHelmRelease)
	}
	if len(e.OperatorDeployments) > 0 || e.ControllerImage != "" {
		out = append(out, KindDeployment)
	}
	out = append(out, KindClusterPolicy)
	if len(e.NVIDIADrivers) > 0 {
		out = append(out, KindNVIDIADriver)
	}
	return append(out, KindNode, KindResourceSlice, KindDriverRollout)
}

// Object is an empty object of the kind, as the gate reads it: typed where
// Scheme has the kind, else unstructured with its GVK set.
func (k ReadKind) Object() client.Object {
	switch k {
	case KindNode:
		return &corev1.Node{}
	case KindDriverRollout:
		return &v1alpha1.DriverRollout{}
	case KindResourceSlice:
		return &resourcev1.ResourceSlice{}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GVK)
	return u
}

// list is an empty list of the kind, read unstructured.
func (k ReadKind) list() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
	return l
}

func (k ReadKind) scope() meta.RESTScope {
	if k.Namespaced {
		return meta.RESTScopeNamespace
	}
	return meta.RESTScopeRoot
}

// FluxNamespace holds Flux's own objects: the cluster's Kustomizations
// and the GitRepository they apply from.
const FluxNamespace = "flux-system"

// ArgoCDNamespace holds Argo CD and its Applications (render.ArgoCDNamespace).
const ArgoCDNamespace = render.ArgoCDNamespace
