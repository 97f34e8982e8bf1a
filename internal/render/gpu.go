package render

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/internal/fleet"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// GPUOperatorValues are the GPU Operator chart values gpufleet installs a
// release with: driver management goes to NVIDIADriver objects (one per
// pool and driver version, rendered in the config step) and the operator's
// own automatic driver upgrade is off, so it never fights gpufleet's
// controller over a node.
//
// With the gpu-operator actuator the operator's upgrade policy is set
// instead, and a cluster adopted with its driver managed by the
// ClusterPolicy keeps it so (see gpuOperatorValues and
// GPUOperatorValuesFor).
func GPUOperatorValues(rel *fleet.Release) map[string]any {
	return gpuOperatorValues(rel, gpuValues{})
}

// gpuValues is what a cluster's GPU Operator values depend on besides its
// release.
type gpuValues struct {
	// mig: a pool uses MIG.
	mig bool
	// policy is the cluster's (nil: the default, the gpufleet actuator).
	policy *fleet.Policy
	// clusterPolicy: the driver stays with the ClusterPolicy
	// (fleet.DriverManagementClusterPolicy).
	clusterPolicy bool
	// moving: the cluster's DriverRollout moves the driver (see
	// clusterPlan.movesDriver).
	moving bool
	// rdma: a pool uses GPUDirect RDMA (fleet.Pool.GPUDirectRDMA).
	rdma bool
}

// gpuOperatorValues are the GPU Operator chart values of a cluster running
// rel.
//
// A cluster whose driver stays with the ClusterPolicy keeps the operator in
// that mode (driver.nvidiaDriverCRD.enabled false: switching it below
// v26.7.0 makes the operator delete nvidia-driver-daemonset with every
// driver pod at once) and gets the release's driver through the chart's
// driver.version (and driver.usePrecompiled for a precompiled branch), so
// the ClusterPolicy's one driver DaemonSet changes in place and the
// operator's upgrade controller moves the nodes (the gpu-operator
// actuator).
func gpuOperatorValues(rel *fleet.Release, in gpuValues) map[string]any {
	driver := map[string]any{
		"enabled": true,
		"nvidiaDriverCRD": map[string]any{
			"enabled":         !in.clusterPolicy,
			"deployDefaultCR": false,
		},
		"upgradePolicy": upgradePolicy(in.policy, in.moving, true),
	}
	if in.clusterPolicy {
		driver["version"] = rel.Driver
		if rel.Precompiled {
			driver["usePrecompiled"] = true
		}
	}
	if in.rdma {
		// The ClusterPolicy's driver (ClusterPolicy mode) and the chart's
		// idea of the cluster; each NVIDIADriver of a pool with GPUDirect
		// RDMA says it too (nvidiaDriver).
		driver["rdma"] = gpuDirectRDMA()
	}
	v := map[string]any{"driver": driver}
	if in.mig {
		// Pools with and without MIG in one cluster need the mixed strategy,
		// which exposes each slice as its own nvidia.com/mig-* resource.
		v["mig"] = map[string]any{"strategy": "mixed"}
	}
	return v
}

// NetworkOperatorValues are the Network Operator chart values gpufleet uses.
// Node Feature Discovery is left to the GPU Operator, which ships it too:
// two NFD deployments would fight over the same node labels.
func NetworkOperatorValues(_ *fleet.Release) map[string]any {
	return map[string]any{"nfd": map[string]any{"enabled": false}}
}

func usesMIG(c *fleet.Cluster) bool {
	for _, p := range c.Pools {
		if p.MIG != "" && p.MIG != "all-disabled" {
			return true
		}
	}
	return false
}

// configObjects is the config step: one NVIDIADriver per pool and driver
// version, and the cluster's NicClusterPolicy where it has one
// (writesNicClusterPolicy). While a rollout is under way on the cluster both the previous
// and the new driver are declared, and the controller moves nodes between
// them by their gpufleet.io/driver label.
//
// With the gpu-operator actuator there is one NVIDIADriver per pool, at the
// driver of the release the cluster's operators run (the stable one again
// once an abort reached the cluster: reverting the pool is this path's
// rollback), and no node label selects between versions.
//
// A cluster whose driver stays with the ClusterPolicy has no NVIDIADriver:
// the operators step's ClusterPolicy carries the driver. Its config step
// holds one ConfigMap that records that, so the chain of steps stays the
// same for every cluster (Flux prunes the NVIDIADrivers an earlier render
// wrote there): kustomize refuses a kustomization.yaml with no resources.
func configObjects(p clusterPlan) ([]object, error) {
	objs, err := driverObjects(p)
	if err != nil {
		return nil, err
	}
	// The NicClusterPolicy sits beside the drivers: the GPU driver of a
	// pool with GPUDirect RDMA waits for its OFED driver.
	network, err := networkObjects(p)
	if err != nil {
		return nil, err
	}
	return append(objs, network...), nil
}

// driverObjects are the config step's GPU driver objects (see
// configObjects).
func driverObjects(p clusterPlan) ([]object, error) {
	if clusterPolicyManaged(p.cluster) {
		return []object{{file: "configmap-" + driverManagementConfigMap + ".yaml", obj: driverManagementRecord(p)}}, nil
	}
	if operatorActuated(p) {
		var objs []object
		for _, pool := range p.cluster.Pools {
			d, err := nvidiaDriver(p, pool, p.release)
			if err != nil {
				return nil, err
			}
			objs = append(objs, object{file: "nvidiadriver-" + OperatorNVIDIADriverName(pool.Name) + ".yaml", obj: d})
		}
		return objs, nil
	}
	drivers := []*fleet.Release{p.rollout}
	if p.rollbackTo.Driver != p.rollout.Driver {
		drivers = append(drivers, p.rollbackTo)
	}
	var objs []object
	for _, pool := range p.cluster.Pools {
		for _, rel := range drivers {
			d, err := nvidiaDriver(p, pool, rel)
			if err != nil {
				return nil, err
			}
			objs = append(objs, object{file: "nvidiadriver-" + NVIDIADriverName(pool.Name, rel.Driver) + ".yaml", obj: d})
		}
	}
	return objs, nil
}

// driverManagementConfigMap names the ConfigMap the config step of a
// ClusterPolicy-managed cluster holds, in the GPU Operator's namespace.
const driverManagementConfigMap = "gpufleet-driver-management"

// driverManagementRecord is that ConfigMap: who manages the cluster's
// driver and at which version, as render wrote it, for people reading the
// cluster.
func driverManagementRecord(p clusterPlan) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: driverManagementConfigMap, Namespace: p.cluster.GPUOperatorNamespace(), Labels: baseLabels(p)},
		Data: map[string]string{
			"driver-management": p.cluster.DriverManagement(),
			"driver":            p.release.Driver,
			"note":              "The GPU Operator's ClusterPolicy runs this cluster's GPU driver (one DaemonSet, nvidia-driver-daemonset); gpufleet renders no NVIDIADriver for it.",
		},
	}
}

// nvidiaDriverFields are the spec fields that depend on the GPU Operator
// version, each from the version whose NVIDIADriver CRD has it. A field the
// schema requires is written even when the API server would default it:
// offline checks such as kubeconform (which Flux repositories run in CI)
// apply no defaults, and a field written out means the same on every
// version. validate checks every release's rendered objects as written.
var nvidiaDriverFields = []struct {
	since versions.Version
	field string
	value func(p clusterPlan) any
}{
	// kernelModuleType replaced useOpenKernelModules in v25.3.
	{versions.MustParse("25.3.0"), "kernelModuleType", func(clusterPlan) any { return "auto" }},
	// From v26.7 an NVIDIADriver upgrades its nodes by itself unless told
	// not to (ClusterPolicy's default is the opposite), and the
	// gpu-operator actuator's policy goes here as well as on ClusterPolicy.
	{versions.MustParse("26.7.0"), "upgradePolicy", func(p clusterPlan) any { return upgradePolicy(&p.policy, p.movesDriver(), false) }},
	// v26.7 requires default (false by default). gpufleet's NVIDIADrivers
	// select nodes, and a default one must not have a nodeSelector.
	{versions.MustParse("26.7.0"), "default", func(clusterPlan) any { return false }},
}

// NVIDIADriverName names the NVIDIADriver of a pool at a driver version
// or, for a precompiled driver, a branch ("h100-570"). A release's driver
// is a branch exactly when it is precompiled (the fleet file sees to it),
// so a name never stands for both: usePrecompiled, which the operator
// makes immutable, never changes on an existing NVIDIADriver.
func NVIDIADriverName(pool, driver string) string { return pool + "-" + dnsName(driver) }

// nvidiaDriver builds an NVIDIADriver (nvidia.com/v1alpha1, cluster-scoped)
// for rel's driver with only the fields the installed operator version
// knows: the schema rejects unknown fields, and fields come and go between
// versions.
//
// A precompiled driver (rel.Precompiled) sets usePrecompiled and names its
// branch as version; the operator then runs one DaemonSet per kernel
// version under this object, adding the kernel-version label
// (feature.node.kubernetes.io/kernel-version.full) to this nodeSelector
// itself. The selector and gpufleet.io/driver carry the branch, a valid
// label value, so moving a node works as for a full version. The version
// is a string in every CRD version: the encoder quotes "570", which YAML
// would otherwise read as an integer.
func nvidiaDriver(p clusterPlan, pool *fleet.Pool, rel *fleet.Release) (map[string]any, error) {
	opVersion, err := versions.Parse(p.release.GPUOperator)
	if err != nil {
		return nil, fmt.Errorf("gpu-operator version %q: %w", p.release.GPUOperator, err)
	}
	driver := rel.Driver
	selector := map[string]any{
		v1alpha1.LabelGFDProduct: pool.Product,
		v1alpha1.LabelDriver:     driver,
	}
	name := NVIDIADriverName(pool.Name, driver)
	var tolerations []any
	if operatorActuated(p) {
		// One NVIDIADriver per pool, changed in place: no label flip.
		delete(selector, v1alpha1.LabelDriver)
		name = OperatorNVIDIADriverName(pool.Name)
		tolerations = operatorTolerations()
	}
	// The product tells a pool's nodes apart unless two pools of the
	// cluster share it: then the pool label does.
	if sharesProduct(p.cluster, pool) {
		selector[v1alpha1.LabelPool] = pool.Name
	}
	spec := map[string]any{
		"driverType":   "gpu",
		"repository":   "nvcr.io/nvidia",
		"image":        "driver",
		"version":      driver,
		"nodeSelector": selector,
	}
	if rel.Precompiled {
		// Every NVIDIADriver CRD version gpufleet supports (v24.6 on) has it.
		spec["usePrecompiled"] = true
	}
	if tolerations != nil {
		// Every NVIDIADriver CRD version (v24.6 on) has it too.
		spec["tolerations"] = tolerations
	}
	if pool.GPUDirectRDMA {
		// And rdma (enabled, useHostMofed): an NVIDIADriver's driver pods
		// take it from here, not from the chart's driver.rdma.
		spec["rdma"] = gpuDirectRDMA()
	}
	for _, v := range nvidiaDriverFields {
		if opVersion.AtLeast(v.since) {
			spec[v.field] = v.value(p)
		}
	}
	meta := map[string]any{
		"name":   name,
		"labels": anyMap(baseLabels(p)),
	}
	if pool.MIG != "" {
		meta["annotations"] = map[string]any{"gpufleet.io/mig-config": pool.MIG}
	}
	return map[string]any{
		"apiVersion": v1alpha1.NVIDIADriverAPIVersion,
		"kind":       v1alpha1.KindNVIDIADriver,
		"metadata":   meta,
		"spec":       spec,
	}, nil
}

func sharesProduct(c *fleet.Cluster, pool *fleet.Pool) bool {
	for _, other := range c.Pools {
		if other != pool && other.Product == pool.Product {
			return true
		}
	}
	return false
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// OperatorField is a field render writes on an NVIDIADriver only from a
// GPU Operator version on: what this build knows of the operator's
// versions (gpufleet version lists them).
type OperatorField struct {
	Field string `json:"field"`
	Since string `json:"since"`
}

// NVIDIADriverFieldsByVersion lists the version-dependent NVIDIADriver
// fields render writes, oldest first, read from the same table nvidiaDriver
// uses so the two cannot disagree.
func NVIDIADriverFieldsByVersion() []OperatorField {
	out := make([]OperatorField, 0, len(nvidiaDriverFields))
	for _, f := range nvidiaDriverFields {
		out = append(out, OperatorField{Field: f.field, Since: "v" + f.since.String()})
	}
	return out
}
