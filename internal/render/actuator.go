package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// The gpu-operator actuator ([policy] actuator = "gpu-operator"): the GPU
// Operator's own upgrade controller moves the nodes, and gpufleet-controller
// only releases them one by one (see v1alpha1.ActuatorGPUOperator). Render
// then writes one NVIDIADriver per pool whose version changes in place, so
// the operator sees its driver pods out of date with their DaemonSet (which
// it runs with updateStrategy OnDelete) and marks the nodes
// upgrade-required; and it turns the operator's upgrade policy on, from the
// same policy fields gpufleet's own actuator uses.

// operatorActuated reports whether the cluster's nodes are moved by the GPU
// Operator's upgrade controller.
func operatorActuated(p clusterPlan) bool {
	return p.policy.Actuator == v1alpha1.ActuatorGPUOperator
}

// OperatorNVIDIADriverName names a pool's one NVIDIADriver on the
// gpu-operator actuator's path. It carries no version, as the version
// changes in place. A release moving between a full version and a
// precompiled branch would flip usePrecompiled, which the operator refuses
// as immutable: the config step then fails and nothing moves, rather than
// a new NVIDIADriver's DaemonSet starting on every node at once.
func OperatorNVIDIADriverName(pool string) string { return pool }

// upgradePolicy is the operator's DriverUpgradePolicySpec
// (k8s-operator-libs api/upgrade/v1alpha1) for policy pol: as the chart's
// driver.upgradePolicy values (chart = true: the chart calls pod deletion
// gpuPodDeletion) or as NVIDIADriver.spec.upgradePolicy (v26.7 on). It is
// the one place that writes the operator's upgrade policy, for the
// ClusterPolicy and the NVIDIADrivers alike.
//
// On the gpufleet actuator it is autoUpgrade false alone. On the
// gpu-operator actuator every field is written (the chart's template
// dereferences drain, gpuPodDeletion and waitForCompletion, and the
// operator, v25.3.4 controllers/upgrade_controller.go, dereferences drain
// without a nil check), and autoUpgrade is moving: true only while the
// cluster's DriverRollout moves the driver (clusterPlan.movesDriver).
// Between rollouts nothing holds the nodes: the controller holds them with
// the skip label only once the lifecycle step has applied a DriverRollout,
// and on adoption the first apply must change nothing that runs, while the
// chart's default, and from v26.7 an NVIDIADriver's, is autoUpgrade true.
// A rollout turns it on in the same render that changes the driver, under
// the holds of the DriverRollout already in place.
//
// The numbers are gpufleet's own: maxParallelUpgrades is parallel-nodes;
// maxUnavailable the same count or percentage (the operator rounds a
// percentage up where gpufleet rounds it down, so gpufleet's limit is the
// one that binds); the GPU pods are deleted (force and deleteEmptyDir, as
// gpufleet's own eviction does) within drain-timeout, and the operator's
// drain, which evicts, is on only for what evict asks beyond the pods that
// request a GPU: every pod with evict = "all", the pods gpu-pod-selector
// matches (its podSelector) with the default; the jobs wait-for-pods names
// are waited for, wait-timeout at most, as gpufleet's actuator waits.
func upgradePolicy(pol *fleet.Policy, moving, chart bool) map[string]any {
	if pol == nil || pol.Actuator != v1alpha1.ActuatorGPUOperator {
		return map[string]any{"autoUpgrade": false}
	}
	timeout := int64(pol.DrainTimeout.Seconds())
	if timeout <= 0 {
		timeout = int64(v1alpha1.DefaultDrainTimeout.Seconds())
	}
	maxUnavailable := any(v1alpha1.DefaultMaxUnavailable)
	if v := pol.MaxUnavailable.IntOrString(); v != nil {
		maxUnavailable = v.IntValue()
		if pol.MaxUnavailable.Percent {
			maxUnavailable = v.String()
		}
	}
	deletion := "podDeletion"
	if chart {
		deletion = "gpuPodDeletion"
	}
	// The operator's pod deletion takes the pods that request a GPU, as
	// planner.HoldsGPU reads them; its drain the rest of what evict says.
	drain, podSelector := pol.Evict == v1alpha1.EvictAll, ""
	if !drain && pol.GPUPodSelector != nil {
		drain, podSelector = true, metav1.FormatLabelSelector(pol.GPUPodSelector)
	}
	return map[string]any{
		"autoUpgrade":         moving,
		"maxParallelUpgrades": max(pol.ParallelNodes, v1alpha1.DefaultParallelNodes),
		"maxUnavailable":      maxUnavailable,
		"waitForCompletion":   waitForCompletion(pol),
		deletion:              map[string]any{"force": true, "timeoutSeconds": timeout, "deleteEmptyDir": true},
		"drain":               map[string]any{"enable": drain, "force": true, "podSelector": podSelector, "timeoutSeconds": timeout, "deleteEmptyDir": true},
	}
}

// waitForCompletion is the operator's wait for jobs: the pods the policy's
// wait-for-pods names, for wait-timeout; none (timeout 0 and no selector)
// where it names none.
func waitForCompletion(pol *fleet.Policy) map[string]any {
	if pol.WaitForPods == nil || pol.WaitTimeout <= 0 {
		return map[string]any{"timeoutSeconds": 0}
	}
	return map[string]any{"podSelector": metav1.FormatLabelSelector(pol.WaitForPods), "timeoutSeconds": int64(pol.WaitTimeout.Seconds())}
}

// GPUOperatorValuesFor are the GPU Operator chart values of cluster running
// rel, as its policy, its driver management and its DriverRollout stand
// (GPUOperatorValues with its actuator's upgrade policy, on while the
// rollout moves the driver; ClusterPolicy mode for a cluster adopted so),
// merged over the cluster's own values.
func GPUOperatorValuesFor(f *fleet.Fleet, cluster string, rel *fleet.Release) map[string]any {
	c := f.Clusters[cluster]
	if c == nil {
		return GPUOperatorValues(rel)
	}
	p := planFor(f, c)
	return gpuChartValues(p, rel, p.movesDriver())
}

// clusterGPUValues is what the GPU Operator values of p's cluster depend on
// besides the release, with the driver moving or not.
func clusterGPUValues(p clusterPlan, moving bool) gpuValues {
	return gpuValues{mig: usesMIG(p.cluster), policy: &p.policy, clusterPolicy: clusterPolicyManaged(p.cluster), moving: moving, rdma: p.cluster.UsesGPUDirectRDMA()}
}

// GPUOperatorValueSets are the distinct GPU Operator chart values the
// clusters of f would install rel with, in the clusters' name order,
// GPUOperatorValues first: what `gpufleet validate` renders the chart with.
// A cluster on the gpu-operator actuator gives both its values at rest and
// those while a rollout moves its driver (the upgrade policy on), a
// cluster whose driver stays with the ClusterPolicy its ClusterPolicy-mode
// values, and a cluster with values of its own those merged under
// gpufleet's, so validate renders and checks each at the release's version
// (against the chart's values.schema.json too, as Helm would).
func GPUOperatorValueSets(f *fleet.Fleet, rel *fleet.Release) []ValueSet {
	sets := valueSets{}
	sets.add(GPUOperatorValues(rel), "")
	for _, name := range f.ClusterNames() {
		p := planFor(f, f.Clusters[name])
		for _, moving := range []bool{false, true} {
			sets.add(gpuChartValues(p, rel, moving), name)
		}
	}
	return sets.list
}

// operatorTolerations let the driver DaemonSet tolerate gpufleet's
// quarantine taint (the DriverRollout's default, which render writes). The
// operator's upgrade controller refuses to build its state while a driver
// DaemonSet's desiredNumberScheduled differs from its pod count
// (k8s-operator-libs BuildState: "driver DaemonSet should not have
// Unscheduled pods"), and a NoSchedule taint the DaemonSet does not
// tolerate takes the node out of the desired count while its pod keeps
// running: one quarantined node would stop every later upgrade of the
// cluster (seen on the real operator). Workloads do not tolerate it, so the
// taint still keeps them off.
func operatorTolerations() []any {
	return []any{map[string]any{"key": v1alpha1.TaintQuarantined, "operator": "Exists", "effect": "NoSchedule"}}
}
