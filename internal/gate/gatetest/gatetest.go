// Package gatetest arranges clusters on the testbed the way the fleet's
// controllers leave them once a release converged, so tests of the gate and
// of promotion can run the real gate against real API servers. Objects are
// created through the API server (their CRDs must be installed), with the
// statuses Flux, helm-controller and the GPU Operator would set; GPU nodes
// come from the node agent, kwok is their kubelet, and their driver pods
// come from a driver DaemonSet (package nodesimtest) run by the real
// DaemonSet controller.
package gatetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// CRDDirs are the CRDs a gated cluster needs: the GPU Operator's (real,
// from ../shared/operators at version), the DriverRollout's, a stand-in for
// helm-controller's HelmRelease (the program cannot be built here, so its
// CRD is not at hand; the gate reads HelmReleases unstructured), and
// Flux's own. root is the repository root. It returns an error naming what
// is missing when the shared operator data is absent.
func CRDDirs(root, gpuOperatorVersion string) ([]string, error) {
	shared := root + "/../shared/operators/gpu-operator/" + gpuOperatorVersion + "/deployments/gpu-operator/crds"
	if _, err := os.Stat(shared); err != nil {
		return nil, fmt.Errorf("the real GPU Operator CRDs are not in ../shared/operators: %w", err)
	}
	dirs := []string{shared, root + "/config/crd/bases", root + "/internal/gate/gatetest/testdata/helmrelease-crd.yaml"}
	if bins, err := testbed.FindBinaries(); err == nil {
		dirs = append(dirs, bins.FluxCRDDir())
	}
	return dirs, nil
}

// LastTransition is the time stamped on the conditions Arrange writes.
var LastTransition = metav1.Date(2026, 12, 1, 0, 0, 0, 0, metav1.Now().Location())

// Arrange makes cluster e.Cluster look converged on e: Flux Kustomizations
// Ready at e.Revision, HelmReleases Ready at their chart versions, the
// ClusterPolicy and NVIDIADrivers ready, the DriverRollout completed, and
// every GPU node created by the node agent on e.Release's driver, Ready,
// with a Ready driver pod of the driver DaemonSet the GPU Operator would
// run. The cluster must run kube-controller-manager, kube-scheduler and
// kwok (testbed.Options Kube and Kwok). It returns the node agent, synced
// until then (the caller may Run it).
func Arrange(ctx context.Context, c client.Client, e gate.Expected) (*nodesim.Sim, error) {
	for _, ns := range namespaces(e) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision", "lastTransitionTime": LastTransition.UTC().Format("2006-01-02T15:04:05Z")}}
	for _, name := range e.Kustomizations {
		spec := map[string]any{"interval": "10m", "path": "./clusters/" + e.Cluster + "/" + name, "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}
		status := map[string]any{"conditions": ready, "lastAppliedRevision": "main@sha1:" + e.Revision}
		if err := create(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", name, spec, status); err != nil {
			return nil, err
		}
	}
	for key, version := range e.HelmReleases {
		ns, name, _ := strings.Cut(key, "/")
		status := map[string]any{"conditions": ready, "history": []any{map[string]any{"chartVersion": version}}}
		if err := create(ctx, c, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, name, map[string]any{"interval": "30m"}, status); err != nil {
			return nil, err
		}
	}
	empty := map[string]any{}
	// The driver managed as the fleet file says (the chart writes
	// useNvidiaDriverCRD from driver.nvidiaDriverCRD.enabled).
	driver := map[string]any{"useNvidiaDriverCRD": e.DriverManagement != fleet.DriverManagementClusterPolicy}
	policy := map[string]any{"daemonsets": empty, "dcgm": empty, "dcgmExporter": empty, "devicePlugin": empty, "driver": driver, "gfd": empty, "nodeStatusExporter": empty, "operator": empty, "toolkit": empty}
	if err := create(ctx, c, "nvidia.com/v1", "ClusterPolicy", "", "cluster-policy", policy, map[string]any{"state": "ready"}); err != nil {
		return nil, err
	}
	for _, name := range e.NVIDIADrivers {
		if err := create(ctx, c, "nvidia.com/v1alpha1", "NVIDIADriver", "", name, map[string]any{"driverType": "gpu", "image": "driver"}, map[string]any{"state": "ready"}); err != nil {
			return nil, err
		}
	}
	sim := nodesim.New(c, nodesim.Options{DriverNamespace: e.GPUOperatorNamespace})
	total := int32(0)
	for _, p := range e.Pools {
		if _, err := nodesimtest.AddPool(ctx, c, sim, e.GPUOperatorNamespace, nodesim.Pool{Name: p.Name, Product: p.Product, Nodes: p.Nodes, Driver: e.Release.Driver}); err != nil {
			return nil, fmt.Errorf("node agent: %w", err)
		}
		total += int32(p.Nodes)
	}
	if err := nodesimtest.WaitReady(ctx, c, e.GPUOperatorNamespace, e.Release.Driver, sim.Nodes(), sim.Sync); err != nil {
		return nil, fmt.Errorf("node agent: %w", err)
	}
	if e.Actuator == v1alpha1.ActuatorGPUOperator {
		// gpufleet-controller holds every node of a converged rollout.
		if err := holdNodes(ctx, c); err != nil {
			return nil, err
		}
	}
	dr := &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: e.Rollout},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion: e.Release.Driver, PreviousVersion: e.Release.Driver, FailureBudget: int32(e.MaxQuarantined),
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.present": "true"}},
		},
	}
	if err := c.Create(ctx, dr); err != nil {
		return nil, fmt.Errorf("DriverRollout: %w", err)
	}
	dr.Status = v1alpha1.DriverRolloutStatus{
		ObservedGeneration: dr.Generation, Phase: v1alpha1.PhaseCompleted, Total: total, Nodes: v1alpha1.NodeCounts{Done: total},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "AllNodesDone", Message: "every node is on the target driver", LastTransitionTime: LastTransition}},
	}
	if err := c.Status().Update(ctx, dr); err != nil {
		return nil, fmt.Errorf("DriverRollout status: %w", err)
	}
	return sim, nil
}

// holdNodes puts the GPU Operator's skip label on every node, as
// gpufleet-controller leaves the nodes of a completed rollout on the
// gpu-operator actuator.
func holdNodes(ctx context.Context, c client.Client) error {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels[v1alpha1.LabelOperatorUpgradeSkip] = "true"
		if err := c.Patch(ctx, &n, patch); err != nil {
			return fmt.Errorf("hold node %s: %w", n.Name, err)
		}
	}
	return nil
}

// namespaces are the namespaces Arrange writes to: Flux's, and the
// operators' where the fleet file installs them.
func namespaces(e gate.Expected) []string {
	out := []string{gate.FluxNamespace, e.GPUOperatorNamespace}
	for _, m := range []map[string]string{e.HelmReleases, e.OperatorDeployments} {
		for key := range m {
			if ns, _, _ := strings.Cut(key, "/"); !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	return out
}

// create makes an object and then sets its status, as its controller would.
func create(ctx context.Context, c client.Client, apiVersion, kind, ns, name string, spec, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace(ns)
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("create %s %s: %w", kind, name, err)
	}
	status["observedGeneration"] = u.GetGeneration()
	u.Object["status"] = status
	if err := c.Status().Update(ctx, u); err != nil {
		return fmt.Errorf("status of %s %s: %w", kind, name, err)
	}
	return nil
}

// Update changes one object through get, mutate and update (status
// subresource when status is true); see testbed.Update.
func Update(ctx context.Context, c client.Client, apiVersion, kind, ns, name string, status bool, mutate func(*unstructured.Unstructured)) error {
	return testbed.Update(ctx, c, apiVersion, kind, ns, name, status, mutate)
}
