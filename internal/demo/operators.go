package demo

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServeHelmIndex serves, at /charts/index.yaml, the Helm repository index
// the rendered HelmRepository points at: both operator charts at the demo
// fleet's versions. source-controller fetches it for real; nothing installs
// the charts.
func ServeHelmIndex(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/charts/index.yaml" {
		http.NotFound(rw, r)
		return
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for chart, versions := range map[string][]string{
		"gpu-operator":     {"v25.3.4", "v25.10.1"},
		"network-operator": {"v25.4.0", "v25.10.0"},
	} {
		fmt.Fprintf(&b, "  %s:\n", chart)
		for _, v := range versions {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    name: %s\n    version: %s\n    urls:\n    - %s-%s.tgz\n", chart, v, chart, v)
		}
	}
	b.WriteString("generated: \"2026-12-01T00:00:00Z\"\n")
	rw.Header().Set("Content-Type", "application/x-yaml")
	_, _ = rw.Write([]byte(b.String()))
}

// CreateClusterPolicy creates the ClusterPolicy the GPU Operator's chart
// would, reporting state ready.
func CreateClusterPolicy(ctx context.Context, c client.Client) error {
	empty := map[string]any{}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": "cluster-policy"},
		"spec":     map[string]any{"daemonsets": empty, "dcgm": empty, "dcgmExporter": empty, "devicePlugin": empty, "driver": empty, "gfd": empty, "nodeStatusExporter": empty, "operator": empty, "toolkit": empty},
	}}
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("ClusterPolicy: %w", err)
	}
	u.Object["status"] = map[string]any{"state": "ready"}
	if err := c.Status().Update(ctx, u); err != nil {
		return fmt.Errorf("ClusterPolicy status: %w", err)
	}
	return nil
}

// PlayOperators plays, for one cluster, the controllers the testbed does not
// run: helm-controller (it cannot be built here), the GPU Operator and
// notification-controller. Until ctx ends it marks every HelmRelease Ready
// at the chart version its spec asks for, every NVIDIADriver state "ready",
// and every Receiver Ready. Without it the rendered operators, config and
// infra-configs Kustomizations (wait: true) would never be Ready, and what
// depends on them never applied.
func PlayOperators(ctx context.Context, c client.Client) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hrs := &unstructured.UnstructuredList{}
		hrs.SetAPIVersion("helm.toolkit.fluxcd.io/v2")
		hrs.SetKind("HelmReleaseList")
		if err := c.List(ctx, hrs); err == nil {
			for i := range hrs.Items {
				hr := &hrs.Items[i]
				version, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "version")
				gen, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
				hist, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
				if gen == hr.GetGeneration() && len(hist) > 0 && hist[0].(map[string]any)["chartVersion"] == version {
					continue
				}
				hr.Object["status"] = map[string]any{
					"observedGeneration":    hr.GetGeneration(),
					"lastAttemptedRevision": version,
					"history":               append([]any{map[string]any{"chartVersion": version, "status": "deployed"}}, hist...),
					"conditions": []any{map[string]any{
						"type": "Ready", "status": "True", "reason": "UpgradeSucceeded",
						"message":            "simulated helm-controller: release at chart " + version,
						"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
					}},
				}
				_ = c.Status().Update(ctx, hr)
			}
		}
		// notification-controller is not built for the testbed: the serving
		// stack's push Receiver is marked Ready as it would mark it, or the
		// infra-configs Kustomization (wait: true) would never be Ready.
		receivers := &unstructured.UnstructuredList{}
		receivers.SetAPIVersion("notification.toolkit.fluxcd.io/v1")
		receivers.SetKind("ReceiverList")
		if err := c.List(ctx, receivers); err == nil {
			for i := range receivers.Items {
				r := &receivers.Items[i]
				if gen, _, _ := unstructured.NestedInt64(r.Object, "status", "observedGeneration"); gen == r.GetGeneration() {
					continue
				}
				r.Object["status"] = map[string]any{
					"observedGeneration": r.GetGeneration(),
					"webhookPath":        "/hook/simulated-" + r.GetName(),
					"conditions": []any{map[string]any{
						"type": "Ready", "status": "True", "reason": "Succeeded",
						"message":            "simulated notification-controller: Receiver initialized",
						"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
					}},
				}
				_ = c.Status().Update(ctx, r)
			}
		}
		drivers := &unstructured.UnstructuredList{}
		drivers.SetAPIVersion("nvidia.com/v1alpha1")
		drivers.SetKind("NVIDIADriverList")
		if err := c.List(ctx, drivers); err == nil {
			for i := range drivers.Items {
				d := &drivers.Items[i]
				if state, _, _ := unstructured.NestedString(d.Object, "status", "state"); state == "ready" {
					continue
				}
				d.Object["status"] = map[string]any{"state": "ready"}
				_ = c.Status().Update(ctx, d)
			}
		}
	}
}
