package lab

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// The workload of the drain check: a training job's workers on the GPU
// nodes, guarded by a PodDisruptionBudget that allows one disruption. Its
// pods carry the label app=WorkloadApp.
const (
	WorkloadApp       = "trainer"
	workloadNamespace = "training"
	WorkloadReplicas  = 3
	workloadMin       = 2
	// workloadStartup is how long a worker takes to become Ready (kwok
	// honours testbed.PodReadyAfterAnnotation), so a replacement keeps the
	// budget closed for a while.
	workloadStartup = 3 * time.Second
)

// CreateWorkload runs the workload on cluster's GPU nodes and waits until
// the real disruption controller has computed its budget.
func (w *Play) CreateWorkload(cluster string) {
	w.T.Helper()
	ctx := w.Context()
	c := w.Client(cluster)
	if err := StartWorkload(ctx, c); err != nil {
		w.T.Fatal(err)
	}
	w.Eventually(time.Minute, "the workload's budget computed by the disruption controller", func() (bool, string) {
		return WorkloadBudgetReady(ctx, c)
	})
}

// StartWorkload creates the GPU workers (one GPU each, on the pool's
// product) and their PodDisruptionBudget of one disruption.
func StartWorkload(ctx context.Context, c client.Client) error {
	sel := map[string]string{"app": WorkloadApp}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadApp, Namespace: workloadNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](WorkloadReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel, Annotations: map[string]string{
					testbed.PodReadyAfterAnnotation: workloadStartup.String(),
				}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{v1alpha1.LabelGFDProduct: Product},
					Containers: []corev1.Container{{
						Name: "worker", Image: "trainer:1",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{nodesim.ResourceGPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadApp, Namespace: workloadNamespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(workloadMin)),
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

// WorkloadBudgetReady says whether the disruption controller counts every
// worker healthy and allows one disruption, and what the budget's status
// is.
func WorkloadBudgetReady(ctx context.Context, c client.Client) (bool, string) {
	got := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: workloadNamespace, Name: WorkloadApp}, got); err != nil {
		return false, err.Error()
	}
	return got.Status.CurrentHealthy == WorkloadReplicas && got.Status.DisruptionsAllowed == 1, fmt.Sprintf("%+v", got.Status)
}

// evictions returns how many evictions the controllers of every cluster
// made with result ("evicted", "blocked"): the processes the controllers'
// Deployments ran (every one of each, see testbed.Controller.Counter), or
// the controllers in this process where the fleet file installs none.
func (w *World) evictions(result string) float64 {
	if len(w.Controllers) > 0 {
		var sum float64
		for _, c := range w.Controllers {
			sum += c.Counter("gpufleet_rollout_evictions_total", "result", result)
		}
		return sum
	}
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
