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

// upgradePolicy is the operator's DriverUpgradePolicySpec for policy pol,
// as chart values (chart = true) or as NVIDIADriver.spec.upgradePolicy: the
// one place that writes it. On the gpufleet actuator it is autoUpgrade
// false; on the gpu-operator actuator every field, with gpufleet's numbers,
// and autoUpgrade true only while moving. Why: docs/design/operator-upgrade-policy.md.
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
