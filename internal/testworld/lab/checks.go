package lab

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/controller"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// The story's checks of the real GPU Operator's behaviour: the driver
// DaemonSets it runs and the pods they place.

// driverDaemonSets returns the GPU Operator's driver DaemonSets of cluster
// by name, with the NVIDIADriver that owns each.
func (w *Play) driverDaemonSets(cluster string) map[string]string {
	w.T.Helper()
	var dss appsv1.DaemonSetList
	if err := w.Client(cluster).List(w.Context(), &dss, client.InNamespace("gpu-operator"),
		client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}); err != nil {
		w.T.Fatal(err)
	}
	out := map[string]string{}
	for _, ds := range dss.Items {
		owner := ""
		for _, ref := range ds.OwnerReferences {
			if ref.Kind == "NVIDIADriver" {
				owner = ref.Name
			}
		}
		out[ds.Name] = owner
	}
	return out
}

// checkDriverPlacement checks that cluster runs one driver DaemonSet per
// NVIDIADriver (one OS version here), each owned by its NVIDIADriver, and
// that every driver pod runs on a node its NVIDIADriver selects, one per
// GPU node, all Ready on the version the node's GFD label reports.
func (w *Play) checkDriverPlacement(cluster string) {
	w.T.Helper()
	ctx := w.Context()
	c := w.Client(cluster)
	drivers := &unstructured.UnstructuredList{}
	drivers.SetAPIVersion(v1alpha1.NVIDIADriverAPIVersion)
	drivers.SetKind(v1alpha1.KindNVIDIADriver + "List")
	if err := c.List(ctx, drivers); err != nil {
		w.T.Fatal(err)
	}
	selector := map[string]labels.Selector{}
	for _, d := range drivers.Items {
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "nodeSelector")
		selector[d.GetName()] = labels.SelectorFromSet(sel)
	}
	dss := w.driverDaemonSets(cluster)
	owners := map[string]int{}
	for ds, owner := range dss {
		if _, ok := selector[owner]; !ok {
			w.T.Errorf("%s: driver DaemonSet %s is owned by %q, not by an NVIDIADriver", cluster, ds, owner)
		}
		owners[owner]++
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		w.T.Fatal(err)
	}
	for name, sel := range selector {
		// The operator runs a DaemonSet per OS version of the nodes an
		// NVIDIADriver selects (one OS here), and none while it selects none.
		want := 0
		for _, n := range nodes.Items {
			if sel.Matches(labels.Set(n.Labels)) {
				want = 1
			}
		}
		if owners[name] != want {
			w.T.Errorf("%s: NVIDIADriver %s has %d driver DaemonSets, want %d (one OS version)", cluster, name, owners[name], want)
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("gpu-operator"), client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}); err != nil {
		w.T.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
			w.T.Fatalf("%s: driver pod %s on node %q: %v", cluster, p.Name, p.Spec.NodeName, err)
		}
		ds := ""
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" {
				ds = ref.Name
			}
		}
		if sel := selector[dss[ds]]; sel == nil || !sel.Matches(labels.Set(n.Labels)) {
			w.T.Errorf("%s: driver pod %s (DaemonSet %s of NVIDIADriver %q) runs on %s, which that NVIDIADriver does not select",
				cluster, p.Name, ds, dss[ds], n.Name)
		}
		if v := nodesim.DriverPodVersion(&p); v != n.Labels[v1alpha1.LabelGFDDriverFull] || !planner.PodReady(&p) {
			w.T.Errorf("%s: driver pod %s on %s: version %s ready %t, GFD reports %s", cluster, p.Name, n.Name, v, planner.PodReady(&p), n.Labels[v1alpha1.LabelGFDDriverFull])
		}
		perNode[n.Name]++
	}
	for n, v := range w.Drivers(cluster) {
		if perNode[n] != 1 {
			w.T.Errorf("%s: node %s (driver %s) has %d driver pods, want 1", cluster, n, v, perNode[n])
		}
	}
	w.T.Logf("%s: %d NVIDIADrivers, %d driver DaemonSets %v, driver pods per node %v", cluster, len(selector), len(dss), dss, perNode)
}

// checkDefaultDriverPodSelector checks that the controller's default
// driver-pod selector picks exactly the real operator's driver pods.
func (w *Play) checkDefaultDriverPodSelector(cluster string) {
	w.T.Helper()
	ctx := w.Context()
	sel, err := labels.Parse(controller.DefaultDriverPodSelector)
	if err != nil {
		w.T.Fatal(err)
	}
	var all corev1.PodList
	if err := w.Client(cluster).List(ctx, &all); err != nil {
		w.T.Fatal(err)
	}
	dss := w.driverDaemonSets(cluster)
	var picked, driver []string
	for _, p := range all.Items {
		if sel.Matches(labels.Set(p.Labels)) {
			picked = append(picked, p.Namespace+"/"+p.Name)
		}
		for _, ref := range p.OwnerReferences {
			if _, ok := dss[ref.Name]; ok && ref.Kind == "DaemonSet" {
				driver = append(driver, p.Namespace+"/"+p.Name)
			}
		}
	}
	slices.Sort(picked)
	slices.Sort(driver)
	if len(driver) == 0 || !slices.Equal(picked, driver) {
		w.T.Errorf("%s: selector %q picks %v; the operator's driver pods are %v", cluster, controller.DefaultDriverPodSelector, picked, driver)
	}
}

// operatorWrote reports whether the GPU Operator itself wrote the status of
// u (its field manager on the status subresource), and who did.
func operatorWrote(u *unstructured.Unstructured) (bool, string) {
	var managers []string
	for _, mf := range u.GetManagedFields() {
		if mf.Subresource == "status" {
			managers = append(managers, mf.Manager)
		}
	}
	return slices.Contains(managers, "gpu-operator"), fmt.Sprint(managers)
}
