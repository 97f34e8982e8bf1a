package render

import (
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// NicClusterPolicyName is the name of the one NicClusterPolicy a cluster
// has: the Network Operator reconciles only the object of that name (its
// chart stopped creating one in v24.10.0).
const NicClusterPolicyName = "nic-cluster-policy"

// NicClusterPolicy's API.
const (
	nicClusterPolicyAPIVersion = "mellanox.com/v1alpha1"
	kindNicClusterPolicy       = "NicClusterPolicy"
)

// ofedImage is the Network Operator's OFED (DOCA) driver image: the
// release's ofed-driver is its version (tag prefix; the operator adds the
// OS and kernel).
const (
	ofedRepository = "nvcr.io/nvidia/mellanox"
	ofedImage      = "doca-driver"
)

// rdmaSharedDevicePlugins are the RDMA shared device plugin images each
// Network Operator version ships (hack/release.yaml at its tag), newest
// last: v25.4.0 names ghcr.io/mellanox's v1.5.3, v25.10.0 on an image of
// its own version on NGC.
var rdmaSharedDevicePlugins = []struct {
	since      versions.Version
	repository string
	version    func(networkOperator string) string
}{
	{versions.MustParse("0.0.0"), "ghcr.io/mellanox", func(string) string { return "v1.5.3" }},
	{versions.MustParse("25.10.0"), "nvcr.io/nvidia/mellanox", func(v string) string { return "network-operator-" + v }},
}

// rdmaSharedDeviceConfig is the RDMA shared device plugin's configuration:
// one resource, rdma/rdma_shared_device_a, shared by up to 63 pods per
// node, over every Mellanox device (the operator's own sample).
const rdmaSharedDeviceConfig = `{
  "configList": [
    {
      "resourceName": "rdma_shared_device_a",
      "rdmaHcaMax": 63,
      "selectors": {
        "vendors": ["15b3"]
      }
    }
  ]
}
`

// writesNicClusterPolicy says p's config step holds a NicClusterPolicy:
// its release runs the Network Operator and names an OFED driver, and a
// pool of the cluster has NICs that operator manages. A release without
// an OFED driver leaves the network side as it is: no NicClusterPolicy is
// written, and one written before is kept (see nicClusterPolicy).
func writesNicClusterPolicy(p clusterPlan) bool {
	return p.release.RunsNetworkOperator() && p.release.OFEDDriver != "" && p.cluster.ManagesNICs()
}

// networkObjects are the NicClusterPolicy of p's cluster, when it has one
// (writesNicClusterPolicy), for the config step.
func networkObjects(p clusterPlan) ([]object, error) {
	if !writesNicClusterPolicy(p) {
		return nil, nil
	}
	ncp, err := nicClusterPolicy(p)
	if err != nil {
		return nil, err
	}
	return []object{{file: "nicclusterpolicy.yaml", obj: ncp}}, nil
}

// nicClusterPolicy is the cluster's NicClusterPolicy (mellanox.com/v1alpha1,
// cluster-scoped): the release's OFED driver and the RDMA shared device
// plugin on the nodes of the pools with managed NICs.
//
// The OFED driver's upgrade policy turns the Network Operator's own
// upgrade state machine on (k8s-operator-libs, driver name "ofed") and
// leaves every choice of node and every drain to gpufleet. The OFED
// DaemonSet is named by OS and kernel, not by driver version, and updates
// OnDelete: a new ofed-driver changes its template in place and no pod
// moves. Only the state machine restarts a node's OFED pod and records
// upgrade-done, which is how the lifecycle controller knows a node's OFED
// reloaded; with autoUpgrade off the operator clears its upgrade state
// labels and ignores every other option, so nothing would ever say
// upgrade-done. The machine would move every node by itself, so the
// controller holds each node of a rollout that names an OFED driver with
// nvidia.com/ofed-driver-upgrade.skip=true and releases it only inside
// that node's maintenance, after its own drain. The machine is on only
// while the cluster's rollout moves OFED (v1alpha1.OFEDSpec.Moves), as the
// ClusterPolicy's is while one moves the GPU driver: on the first apply, and between
// rollouts, no node is held yet or needs to be, and nothing then could
// restart an OFED pod but a reboot:
//   - maxParallelUpgrades is 0 (no limit): the rollout's parallelNodes and
//     maxUnavailable bound the nodes in maintenance, the hold gates each
//     one, and a second limit here could only stall a released node.
//   - drain is off: gpufleet has drained the node already, and the
//     operator's drain would evict a second time, every pod of the node.
//   - no waitForCompletion (the controller's drain waited) and no
//     safeLoad: with it, an OFED pod restarted outside a maintenance (a
//     reboot) waits for a cordon and drain that the hold never lets come,
//     and keeps OFED, the RDMA device plugin and a peermem GPU driver down.
//
// Every field the v25.x CRDs require (image, repository, version) is
// written; v26.4.1 requires only image, the rest may come from
// spec.global, which v25.x does not have. So one object fits every
// version.
//
// Flux and Argo CD keep the object when a later render stops writing it
// (keepOnPrune): a release without ofed-driver leaves the network side as
// it is, and pruning the policy would unload OFED from every node at once.
func nicClusterPolicy(p clusterPlan) (map[string]any, error) {
	opVersion, err := versions.Parse(p.release.NetworkOperator)
	if err != nil {
		return nil, fmt.Errorf("network-operator version %q: %w", p.release.NetworkOperator, err)
	}
	plugin := rdmaSharedDevicePlugins[0]
	for _, d := range rdmaSharedDevicePlugins {
		if opVersion.AtLeast(d.since) {
			plugin = d
		}
	}
	affinity := map[string]any{
		"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": nicPoolTerms(p.cluster),
		},
	}
	spec := map[string]any{
		"nodeAffinity": affinity,
		"ofedDriver": map[string]any{
			"image":      ofedImage,
			"repository": ofedRepository,
			"version":    p.release.OFEDDriver,
			"upgradePolicy": map[string]any{
				"autoUpgrade":         ofedRollout(p).Moves(),
				"maxParallelUpgrades": 0,
				"drain":               map[string]any{"enable": false},
			},
		},
		"rdmaSharedDevicePlugin": map[string]any{
			"image":      "k8s-rdma-shared-dev-plugin",
			"repository": plugin.repository,
			"version":    plugin.version(p.release.NetworkOperator),
			"config":     rdmaSharedDeviceConfig,
		},
	}
	annotations := map[string]any{}
	for k, v := range keepOnPrune(p) {
		annotations[k] = v
	}
	return map[string]any{
		"apiVersion": nicClusterPolicyAPIVersion,
		"kind":       kindNicClusterPolicy,
		"metadata": map[string]any{
			"name":        NicClusterPolicyName,
			"labels":      anyMap(baseLabels(p)),
			"annotations": annotations,
		},
		"spec": spec,
	}, nil
}

// nicPoolTerms select the nodes of the cluster's pools with managed NICs,
// one term per pool (any term matches), the way their NVIDIADrivers select
// them (the product, and the pool where two pools share it), so the OFED
// driver is on every such node whose GPU driver may wait for it, and only
// where Node Feature Discovery found a Mellanox device (which the OFED
// DaemonSet needs anyway).
func nicPoolTerms(c *fleet.Cluster) []any {
	var terms []any
	for _, sel := range nicPoolSelectors(c) {
		var exprs []any
		for _, e := range sel.MatchExpressions {
			exprs = append(exprs, map[string]any{"key": e.Key, "operator": string(e.Operator), "values": anySlice(e.Values)})
		}
		terms = append(terms, map[string]any{"matchExpressions": exprs})
	}
	return terms
}

// nicPoolSelectors select the nodes of the cluster's pools with managed
// NICs, one per pool: the NicClusterPolicy's node affinity (nicPoolTerms)
// and the DriverRollout's spec.ofed.nodeSelectors both come from them.
func nicPoolSelectors(c *fleet.Cluster) []metav1.LabelSelector {
	var out []metav1.LabelSelector
	for _, pool := range c.Pools {
		if !pool.ManagedNICs {
			continue
		}
		exprs := []metav1.LabelSelectorRequirement{{Key: v1alpha1.LabelGFDProduct, Operator: metav1.LabelSelectorOpIn, Values: []string{pool.Product}}}
		if sharesProduct(c, pool) {
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: v1alpha1.LabelPool, Operator: metav1.LabelSelectorOpIn, Values: []string{pool.Name}})
		}
		exprs = append(exprs, metav1.LabelSelectorRequirement{Key: v1alpha1.LabelNFDMellanoxPCI, Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}})
		out = append(out, metav1.LabelSelector{MatchExpressions: exprs})
	}
	return out
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// gpuDirectRDMA is the GPU driver's RDMA setting for a pool whose workloads
// use GPUDirect RDMA (an NVIDIADriver's spec.rdma, the chart's
// driver.rdma): the driver is built against the Network Operator's OFED
// driver in its container (useHostMofed false), waits for it, and loads
// nvidia_peermem.
func gpuDirectRDMA() map[string]any {
	return map[string]any{"enabled": true, "useHostMofed": false}
}
