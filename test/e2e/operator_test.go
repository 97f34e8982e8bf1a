package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/controller"
	"github.com/gpufleet/gpufleet/internal/nodesim"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// labelUpgradeState is the GPU Operator's own upgrade controller's node
// label; it must never appear while gpufleet rolls (its automatic upgrade
// is off).
const labelUpgradeState = "nvidia.com/gpu-driver-upgrade-state"

// recorder samples one cluster over the whole story: which NVIDIADrivers
// select each GPU node, the node's labels, and its driver pods. The checks
// of the real operator's behaviour read what it saw.
type recorder struct {
	c client.Client

	mu        sync.Mutex
	samples   int
	overlaps  []string            // "node: a, b" when two NVIDIADrivers selected one node
	upgrade   []string            // "node=state" whenever the operator's upgrade label was set
	driverPod map[string][]string // node -> distinct "owner/version" of its driver pods, in order seen
	// notReadyPhases: node -> the "rollout/phase" it was in while NotReady.
	notReadyPhases map[string][]string
	// maxUnavailable is the most GPU nodes seen out of service at once:
	// NotReady, cordoned, or in a rollout phase that takes them out.
	maxUnavailable int
	// minReady is the fewest Ready pods of the workload (label app=workloadApp)
	// seen once it had its replicas; -1 before.
	minReady int
	errs     int
}

func newRecorder(c client.Client) *recorder {
	return &recorder{c: c, driverPod: map[string][]string{}, notReadyPhases: map[string][]string{}, minReady: -1}
}

func (r *recorder) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.sample(ctx)
	}
}

func (r *recorder) sample(ctx context.Context) {
	var nodes corev1.NodeList
	drivers := &unstructured.UnstructuredList{}
	drivers.SetAPIVersion("nvidia.com/v1alpha1")
	drivers.SetKind("NVIDIADriverList")
	var pods corev1.PodList
	if r.c.List(ctx, &nodes) != nil || r.c.List(ctx, &pods, client.InNamespace("gpu-operator"),
		client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}) != nil {
		r.mu.Lock()
		r.errs++
		r.mu.Unlock()
		return
	}
	_ = r.c.List(ctx, drivers) // absent before Flux applies the CRD
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples++
	unavailable := 0
	for _, n := range nodes.Items {
		if _, gpu := n.Labels[v1alpha1.LabelGFDProduct]; !gpu {
			continue
		}
		phase := n.Labels[v1alpha1.LabelPhase]
		inFlight := phase != "" && phase != "Pending" && phase != "Done" && phase != "RolledBack"
		ready := planner.NodeReady(&n)
		if !ready || n.Spec.Unschedulable || inFlight {
			unavailable++
		}
		if rp := n.Labels[v1alpha1.LabelRollout] + "/" + phase; !ready && phase != "" && !slices.Contains(r.notReadyPhases[n.Name], rp) {
			r.notReadyPhases[n.Name] = append(r.notReadyPhases[n.Name], rp)
		}
		var selecting []string
		for _, d := range drivers.Items {
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "nodeSelector")
			if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(n.Labels)) {
				selecting = append(selecting, d.GetName())
			}
		}
		if len(selecting) > 1 {
			r.overlaps = append(r.overlaps, n.Name+": "+strings.Join(selecting, ", "))
		}
		if st, ok := n.Labels[labelUpgradeState]; ok {
			r.upgrade = append(r.upgrade, n.Name+"="+st)
		}
	}
	r.maxUnavailable = max(r.maxUnavailable, unavailable)
	var work corev1.PodList
	if r.c.List(ctx, &work, client.MatchingLabels{"app": workloadApp}) == nil {
		ready := 0
		for _, p := range work.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		if r.minReady >= 0 || ready == workloadReplicas {
			if r.minReady < 0 || ready < r.minReady {
				r.minReady = ready
			}
		}
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		owner := "none"
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				owner = ref.Kind + "/" + ref.Name
			}
		}
		entry := owner + "@" + nodesim.DriverPodVersion(&p)
		seen := r.driverPod[p.Spec.NodeName]
		if len(seen) == 0 || seen[len(seen)-1] != entry {
			r.driverPod[p.Spec.NodeName] = append(seen, entry)
		}
	}
}

// seen is a copy of what the recorder saw, for the checks.
type seen struct {
	samples, errs            int
	overlaps, upgrade        []string
	driverPods, notReady     map[string][]string
	maxUnavailable, minReady int
}

func (r *recorder) seen() seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := seen{samples: r.samples, errs: r.errs, overlaps: slices.Clone(r.overlaps), upgrade: slices.Clone(r.upgrade),
		driverPods: map[string][]string{}, notReady: map[string][]string{}, maxUnavailable: r.maxUnavailable, minReady: r.minReady}
	for k, v := range r.driverPod {
		s.driverPods[k] = slices.Clone(v)
	}
	for k, v := range r.notReadyPhases {
		s.notReady[k] = slices.Clone(v)
	}
	return s
}

// resetWorkload starts the workload's minimum over.
func (r *recorder) resetWorkload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.minReady = -1
}

// driverDaemonSets returns the GPU Operator's driver DaemonSets of cluster
// by name, with the NVIDIADriver that owns each.
func (w *world) driverDaemonSets(cluster string) map[string]string {
	w.t.Helper()
	var dss appsv1.DaemonSetList
	if err := w.client(cluster).List(context.Background(), &dss, client.InNamespace("gpu-operator"),
		client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
		w.t.Fatal(err)
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
func (w *world) checkDriverPlacement(cluster string) {
	w.t.Helper()
	ctx := context.Background()
	c := w.client(cluster)
	drivers := &unstructured.UnstructuredList{}
	drivers.SetAPIVersion("nvidia.com/v1alpha1")
	drivers.SetKind("NVIDIADriverList")
	if err := c.List(ctx, drivers); err != nil {
		w.t.Fatal(err)
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
			w.t.Errorf("%s: driver DaemonSet %s is owned by %q, not by an NVIDIADriver", cluster, ds, owner)
		}
		owners[owner]++
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		w.t.Fatal(err)
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
			w.t.Errorf("%s: NVIDIADriver %s has %d driver DaemonSets, want %d (one OS version)", cluster, name, owners[name], want)
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("gpu-operator"), client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
		w.t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
			w.t.Fatalf("%s: driver pod %s on node %q: %v", cluster, p.Name, p.Spec.NodeName, err)
		}
		ds := ""
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" {
				ds = ref.Name
			}
		}
		if sel := selector[dss[ds]]; sel == nil || !sel.Matches(labels.Set(n.Labels)) {
			w.t.Errorf("%s: driver pod %s (DaemonSet %s of NVIDIADriver %q) runs on %s, which that NVIDIADriver does not select",
				cluster, p.Name, ds, dss[ds], n.Name)
		}
		if v := nodesim.DriverPodVersion(&p); v != n.Labels[v1alpha1.LabelGFDDriverFull] || !podReady(&p) {
			w.t.Errorf("%s: driver pod %s on %s: version %s ready %t, GFD reports %s", cluster, p.Name, n.Name, v, podReady(&p), n.Labels[v1alpha1.LabelGFDDriverFull])
		}
		perNode[n.Name]++
	}
	for n, v := range w.drivers(cluster) {
		if perNode[n] != 1 {
			w.t.Errorf("%s: node %s (driver %s) has %d driver pods, want 1", cluster, n, v, perNode[n])
		}
	}
	w.t.Logf("%s: %d NVIDIADrivers, %d driver DaemonSets %v, driver pods per node %v", cluster, len(selector), len(dss), dss, perNode)
}

// checkDefaultDriverPodSelector checks that the controller's default
// driver-pod selector picks exactly the real operator's driver pods.
func (w *world) checkDefaultDriverPodSelector(cluster string) {
	w.t.Helper()
	ctx := context.Background()
	sel, err := labels.Parse(controller.DefaultDriverPodSelector)
	if err != nil {
		w.t.Fatal(err)
	}
	var all corev1.PodList
	if err := w.client(cluster).List(ctx, &all); err != nil {
		w.t.Fatal(err)
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
		w.t.Errorf("%s: selector %q picks %v; the operator's driver pods are %v", cluster, controller.DefaultDriverPodSelector, picked, driver)
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

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The workload of the drain check: a training job's workers on the GPU
// nodes, guarded by a PodDisruptionBudget that allows one disruption.
const (
	workloadApp       = "trainer"
	workloadNamespace = "training"
	workloadReplicas  = 3
	workloadMin       = 2
	// workloadStartup is how long a worker takes to become Ready (kwok
	// honours testbed.PodReadyAfterAnnotation), so a replacement keeps the
	// budget closed for a while.
	workloadStartup = 3 * time.Second
)

// createWorkload runs the workload on cluster's GPU nodes and waits until
// the real disruption controller has computed its budget.
func (w *world) createWorkload(cluster string) {
	w.t.Helper()
	ctx := context.Background()
	c := w.client(cluster)
	if err := createWorkload(ctx, c); err != nil {
		w.t.Fatal(err)
	}
	w.eventually(time.Minute, "the workload's budget computed by the disruption controller", func() (bool, string) {
		return workloadBudgetReady(ctx, c)
	})
}

// createWorkload creates the GPU workers (one GPU each, on the pool's
// product) and their PodDisruptionBudget of one disruption.
func createWorkload(ctx context.Context, c client.Client) error {
	sel := map[string]string{"app": workloadApp}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: workloadApp, Namespace: workloadNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](workloadReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel, Annotations: map[string]string{
					testbed.PodReadyAfterAnnotation: workloadStartup.String(),
				}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{v1alpha1.LabelGFDProduct: product},
					Containers: []corev1.Container{{
						Name: "worker", Image: "trainer:1",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{nodesim.ResourceGPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: workloadApp, Namespace: workloadNamespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(workloadMin)),
			Selector:     &metav1.LabelSelector{MatchLabels: sel},
		},
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}, dep, pdb} {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// workloadBudgetReady: the disruption controller counts every worker
// healthy and allows one disruption.
func workloadBudgetReady(ctx context.Context, c client.Client) (bool, string) {
	got := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: workloadNamespace, Name: workloadApp}, got); err != nil {
		return false, err.Error()
	}
	return got.Status.CurrentHealthy == workloadReplicas && got.Status.DisruptionsAllowed == 1, fmt.Sprintf("%+v", got.Status)
}

// evictions returns how many evictions the controllers (all clusters of
// this process) made with result ("evicted", "blocked").
func evictions(result string) float64 {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "gpufleet_rollout_evictions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
