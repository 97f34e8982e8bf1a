package charts

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// ManifestObjects renders chart name at version from src into the plain
// objects that installing it would create, for applying without Helm (e.g.
// by a Flux Kustomization): the CRDs of the chart and of its enabled
// subcharts first (sorted by name), then the rendered objects in install
// order. Hooks are left out, since nothing runs them outside Helm,
// namespaced objects without a namespace get the release's, as Helm would
// give them, nulls that server-side apply would refuse are dropped
// (see [crdcheck.Set.DropNulls]), and a required field the chart leaves to
// the API server's default is written with it (see
// [crdcheck.Set.FillRequiredDefaults]), so that checks without defaults
// accept what Flux applies.
func ManifestObjects(ctx context.Context, src Source, name, version string, values map[string]any, opts RenderOptions) ([]*unstructured.Unstructured, error) {
	ch, err := src.Load(ctx, name, version)
	if err != nil {
		return nil, err
	}
	crds, err := InstalledCRDs(ch, values)
	if err != nil {
		return nil, err
	}
	crds = dedupeCRDs(crds)
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	if hasRemoteSchemaRef(ch) {
		opts.SkipSchemaValidation = true
	}
	objs, err := Render(ch, values, opts)
	if err != nil {
		return nil, err
	}
	namespace := opts.Namespace
	if namespace == "" {
		namespace = ch.Name()
	}
	// What Flux applies must pass server-side apply, which refuses the nulls
	// that chart templates leave at non-nullable fields.
	schemas, err := crdcheck.NewSet(crds...)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", name, version, err)
	}
	clusterScoped := map[schema.GroupKind]bool{}
	var out []*unstructured.Unstructured
	for _, crd := range crds {
		if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
			clusterScoped[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = true
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
		u.SetKind("CustomResourceDefinition")
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		out = append(out, u)
	}
	for _, o := range objs {
		if o.Hook != "" {
			continue
		}
		u := o.Object
		schemas.DropNulls(u)
		schemas.FillRequiredDefaults(u)
		gk := u.GroupVersionKind().GroupKind()
		if u.GetNamespace() == "" && !clusterScoped[gk] && !builtinClusterScoped[gk] {
			u.SetNamespace(namespace)
		}
		out = append(out, u)
	}
	return out, nil
}

// RenderManifests is ManifestObjects as one multi-document YAML stream. The
// same chart, version and values always give the same bytes.
func RenderManifests(ctx context.Context, src Source, name, version string, values map[string]any, opts RenderOptions) ([]byte, error) {
	objs, err := ManifestObjects(ctx, src, name, version, values, opts)
	if err != nil {
		return nil, err
	}
	return EncodeYAML(objs)
}

// EncodeYAML writes objects as a multi-document YAML stream, keys sorted.
func EncodeYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s/%s: %w", o.GetKind(), o.GetName(), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// builtinClusterScoped are the built-in kinds that have no namespace.
var builtinClusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}:              true,
}
