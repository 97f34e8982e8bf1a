package netopplay

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestKernelHash pins the operator's name for a kernel: FNV-1a of the
// kernel string, printed in decimal, then rand.SafeEncodeString.
func TestKernelHash(t *testing.T) {
	if got, want := DaemonSetName("ubuntu", "22.04", "5.15.0-139-generic"), "mofed-ubuntu22.04-6f5877cd6d-ds"; got != want {
		t.Errorf("DaemonSetName = %q, want %q", got, want)
	}
	if a, b := kernelHash("5.15.0-139-generic"), kernelHash("5.15.0-140-generic"); a == b {
		t.Errorf("two kernels share the hash %q", a)
	}
}

// TestPlayer drives the player on a fake client: one DaemonSet per OS and
// kernel of the NIC nodes, rewritten in place by a new version, gone with
// the policy's ofedDriver; wait labels from the OFED pods' readiness.
func TestPlayer(t *testing.T) {
	ctx := t.Context()
	node := func(name, kernel string, nic bool) *corev1.Node {
		l := map[string]string{v1alpha1.LabelNFDOSID: "ubuntu", v1alpha1.LabelNFDOSVersion: "22.04", v1alpha1.LabelNFDKernel: kernel, corev1.LabelArchStable: "amd64"}
		if nic {
			l[v1alpha1.LabelNFDMellanoxPCI] = "true"
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
		"metadata": map[string]any{"name": PolicyName},
		"spec": map[string]any{
			"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
			"ofedDriver":  map[string]any{"image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox", "version": "25.04-0.6.1.0-2"},
		},
	}}
	ready := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ofed-a", Namespace: "ns", Labels: map[string]string{v1alpha1.LabelOFEDDriverPod: ""}},
		Spec:       corev1.PodSpec{NodeName: "a"},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: v1alpha1.OFEDContainer, Ready: true}}},
	}
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ofed-b", Namespace: "ns", Labels: map[string]string{v1alpha1.LabelOFEDDriverPod: ""}},
		Spec:       corev1.PodSpec{NodeName: "b"},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithObjects(node("a", "5.15.0-139-generic", true), node("b", "6.8.0-45-generic", true), node("c", "5.15.0-139-generic", false),
			ready, pending).Build()
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	p := NewOFEDDaemonSetPlayer(c, Options{Namespace: "ns"})
	daemonSets := func() map[string]appsv1.DaemonSet {
		t.Helper()
		if err := p.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		list := &appsv1.DaemonSetList{}
		if err := c.List(ctx, list, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		out := map[string]appsv1.DaemonSet{}
		for _, ds := range list.Items {
			out[ds.Name] = ds
		}
		return out
	}

	got := daemonSets()
	name := DaemonSetName("ubuntu", "22.04", "5.15.0-139-generic")
	ds, ok := got[name]
	if len(got) != 2 || !ok || got[DaemonSetName("ubuntu", "22.04", "6.8.0-45-generic")].Name == "" {
		t.Fatalf("DaemonSets %v, want one per kernel of the NIC nodes", keys(got))
	}
	spec := ds.Spec.Template.Spec
	if img := spec.Containers[0].Image; img != "nvcr.io/nvidia/mellanox/doca-driver:25.04-0.6.1.0-2-ubuntu22.04-amd64" ||
		spec.Containers[0].Name != v1alpha1.OFEDContainer || ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType ||
		spec.NodeSelector[v1alpha1.LabelNFDKernel] != "5.15.0-139-generic" || spec.NodeSelector[v1alpha1.LabelNFDMellanoxPCI] != "true" ||
		len(spec.Tolerations) != 2 || spec.Tolerations[0].Key != "dedicated" {
		t.Errorf("DaemonSet %s: image %s, strategy %s, selector %v, tolerations %v", name, img, ds.Spec.UpdateStrategy.Type, spec.NodeSelector, spec.Tolerations)
	}
	if _, ok := ds.Spec.Template.Labels[v1alpha1.LabelOFEDDriverPod]; !ok || ds.Spec.Template.Labels["app"] != "mofed-ubuntu22.04-6f5877cd6d" {
		t.Errorf("pod labels %v", ds.Spec.Template.Labels)
	}
	for n, want := range map[string]string{"a": "false", "b": "true", "c": ""} {
		nd := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n}, nd); err != nil {
			t.Fatal(err)
		}
		if got := nd.Labels[v1alpha1.LabelMOFEDWait]; got != want {
			t.Errorf("node %s: %s=%q, want %q", n, v1alpha1.LabelMOFEDWait, got, want)
		}
	}

	// A new version: the same DaemonSet, its template rewritten.
	if err := unstructured.SetNestedField(policy.Object, "doca3.2.0-25.10-1.2.8.0-2", "spec", "ofedDriver", "version"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, policy); err != nil {
		t.Fatal(err)
	}
	after := daemonSets()[name]
	if after.UID != ds.UID || after.Spec.Template.Spec.Containers[0].Image != "nvcr.io/nvidia/mellanox/doca-driver:doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64" {
		t.Errorf("after a version change: DaemonSet %s (uid %s, was %s) image %s", after.Name, after.UID, ds.UID, after.Spec.Template.Spec.Containers[0].Image)
	}

	// No ofedDriver: no OFED DaemonSet.
	unstructured.RemoveNestedField(policy.Object, "spec", "ofedDriver")
	if err := c.Update(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if got := daemonSets(); len(got) != 0 {
		t.Errorf("DaemonSets %v left without spec.ofedDriver", keys(got))
	}
}

func keys(m map[string]appsv1.DaemonSet) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
