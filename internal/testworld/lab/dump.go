package lab

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// Dump describes cluster's Flux Kustomizations or Argo CD Applications, DriverRollouts, nodes (with
// gpufleet's labels and the GPU Operator's upgrade labels) and the
// controller's Events, for a failed run's log.
func (w *World) Dump(cluster string) string {
	ctx := w.Context()
	c := w.Client(cluster)
	var b strings.Builder
	var kss kustomizev1.KustomizationList
	if err := c.List(ctx, &kss, client.InNamespace(testbed.FluxNamespace)); err == nil {
		for _, ks := range kss.Items {
			fmt.Fprintf(&b, "Kustomization %s: applied %s attempted %s", ks.Name, ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision)
			if cond := apimeta.FindStatusCondition(ks.Status.Conditions, "Ready"); cond != nil {
				fmt.Fprintf(&b, " Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
			b.WriteString("\n")
		}
	}
	for _, name := range render.ArgoCDApps() {
		if !w.ArgoCD(cluster) {
			break
		}
		u, err := w.application(cluster, name)
		if err != nil {
			fmt.Fprintf(&b, "Application %s: %v\n", name, err)
			continue
		}
		a := gate.ReadApplication(u)
		fmt.Fprintf(&b, "Application %s: %s at %s, %s %s", name, a.Sync, a.Revision, a.Health, a.HealthMessage)
		if a.Operation != nil {
			fmt.Fprintf(&b, "; last sync %s (retries %d): %s", a.Operation.Phase, a.Operation.RetryCount, a.Operation.Message)
		}
		b.WriteString("\n")
		for _, r := range a.Resources {
			fmt.Fprintf(&b, "  %s: %s %s %s\n", r.Ref(), r.Sync, r.Health, r.Message)
		}
		for _, cond := range a.Conditions {
			fmt.Fprintf(&b, "  %s\n", cond)
		}
	}
	var ros v1alpha1.DriverRolloutList
	if err := c.List(ctx, &ros); err == nil {
		for _, ro := range ros.Items {
			fmt.Fprintf(&b, "DriverRollout %s: target %s previous %s approval %q abort %t phase %s progress %s canary %+v nodes %+v budget %d\n",
				ro.Name, ro.Spec.TargetVersion, ro.Spec.PreviousVersion, ro.Spec.Approval, ro.Spec.Abort, ro.Status.Phase, ro.Status.Progress, ro.Status.Canary, ro.Status.Nodes, ro.Status.BudgetUsed)
			for _, cond := range ro.Status.Conditions {
				if cond.Status == metav1.ConditionTrue || cond.Type == "Ready" {
					fmt.Fprintf(&b, "  %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
				}
			}
		}
	}
	if ctl := w.Controllers[cluster]; ctl != nil {
		for _, st := range ctl.Starts() {
			fmt.Fprintf(&b, "gpufleet-controller started %s as %s\n", st.At.Format(time.TimeOnly), st.Image)
		}
		b.WriteString(ctl.LogTail(20))
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err == nil {
		for _, n := range nodes.Items {
			var gf []string
			for k, v := range n.Labels {
				if strings.HasPrefix(k, "gpufleet.io/") || k == v1alpha1.LabelGFDDriverFull {
					gf = append(gf, k+"="+v)
				}
			}
			slices.Sort(gf)
			fmt.Fprintf(&b, "node %s unschedulable=%t %s operator state %q skip %q\n", n.Name, n.Spec.Unschedulable, strings.Join(gf, " "),
				n.Labels[v1alpha1.LabelOperatorUpgradeState], n.Labels[v1alpha1.LabelOperatorUpgradeSkip])
		}
	}
	var evs corev1.EventList
	if err := c.List(ctx, &evs); err == nil {
		slices.SortFunc(evs.Items, func(a, b corev1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "DriverRollout" {
				fmt.Fprintf(&b, "event %s %s %s: %s\n", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}
