package gate

import (
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gitops"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Expected is what a cluster should run according to the fleet file.
type Expected struct {
	Cluster string
	// Engine is the cluster's GitOps engine, as the fleet file says
	// (fleet.EngineFor); nil is gitops.Default. It decides which of
	// Kustomizations and Applications the gate judges, and how explain
	// tells the engine's part of the story.
	Engine  gitops.Engine
	Release *fleet.Release
	// Revision is the git commit Flux or Argo CD should have applied.
	Revision string
	// Kustomizations are the Flux Kustomizations (flux-system) that must be
	// Ready; none on a cluster on Argo CD.
	Kustomizations []string
	// Applications are the Argo CD Applications (argocd) that must be
	// Synced and Healthy, on a cluster on Argo CD (render.ArgoCDApps).
	Applications []string
	// HelmReleases maps namespace/name to the expected chart version
	// (the helmrelease chart mode).
	HelmReleases map[string]string
	// OperatorDeployments maps namespace/name of each operator's Deployment
	// (render.Operator.Deployment) to its expected chart and version
	// ("gpu-operator-25.3.4", the Helm chart label the chart gives its
	// objects, see chartLabel): in the manifests chart mode
	// there is no HelmRelease, and the operator's Deployment, applied by
	// Flux from the pre-rendered chart, says which chart version runs.
	OperatorDeployments map[string]string
	// NVIDIADrivers are the NVIDIADriver objects of the release.
	NVIDIADrivers []string
	Pools         []*fleet.Pool
	// SharedProduct marks pools whose nodes are told apart by their pool label.
	SharedProduct map[string]bool
	// SignalConditions are node conditions that mean a GPU error when True.
	SignalConditions []string
	// MaxQuarantined is how many quarantined nodes the policy tolerates.
	MaxQuarantined int
	// DriverLabel is set where gpufleet's actuator moves the nodes: its
	// NVIDIADrivers select a node by gpufleet.io/driver, so a node running
	// the release's driver without that label (one that joined unlabelled,
	// or one from a time on the gpu-operator actuator) is selected by none
	// of them, and the operator takes its driver away once the NVIDIADriver
	// that did select it is gone.
	DriverLabel bool
	// Actuator is who moves the nodes. On the gpu-operator actuator
	// gpufleet-controller holds every node of the rollout with the
	// operator's skip label but those it released (the held check).
	Actuator v1alpha1.Actuator
	// DriverManagement is who runs the GPU driver as the fleet file says
	// (fleet.DriverManagementNVIDIADriver or
	// fleet.DriverManagementClusterPolicy), which the cluster's
	// ClusterPolicy must agree with (the driver-management check). In
	// ClusterPolicy mode there is
	// no NVIDIADriver: the ClusterPolicy's state covers its one driver
	// DaemonSet, and the node checks each node's driver.
	DriverManagement string
	// GPUOperatorNamespace holds the GPU Operator and its driver pods: the
	// namespace of the install the fleet file adopts, or the default.
	GPUOperatorNamespace string
	// Rollout is the name of the DriverRollout that must be complete: the
	// one render writes (after an abort, the aborted release's).
	Rollout string
	// ControllerImage is the image gpufleet-controller's Deployment must
	// run, Available (render.ControllerImage); empty where the fleet file
	// names no controller version and the controller is installed by hand.
	ControllerImage string
}

// Expect derives what cluster should run from the fleet file: the
// release, DriverRollout and NVIDIADrivers are render's (render.TargetFor),
// so the gate judges the very objects render writes.
func Expect(f *fleet.Fleet, cluster, revision string) Expected {
	c := f.Clusters[cluster]
	t, err := render.TargetFor(f, cluster)
	if err != nil {
		// Only a cluster the fleet file lacks; the gate is given its own.
		return Expected{Cluster: cluster, Revision: revision}
	}
	rel := t.Release
	pol := f.PolicyFor(cluster)
	e := Expected{
		Cluster:              cluster,
		Engine:               f.EngineFor(cluster),
		Release:              rel,
		Revision:             revision,
		NVIDIADrivers:        t.NVIDIADrivers,
		Pools:                c.Pools,
		SharedProduct:        map[string]bool{},
		SignalConditions:     pol.Health.NodeConditions,
		MaxQuarantined:       pol.FailureBudget,
		DriverLabel:          pol.Actuator != v1alpha1.ActuatorGPUOperator,
		Actuator:             pol.Actuator,
		DriverManagement:     c.DriverManagement(),
		GPUOperatorNamespace: c.GPUOperatorNamespace(),
		Rollout:              t.DriverRollout.Name,
		ControllerImage:      t.ControllerImage,
	}
	gitopsExpectations.For(e.Engine).expect(&e)
	// The operators where and as the cluster installs them (an adopted
	// install's namespace and release, the Network Operator only when the
	// release has one): render's own answer, so the gate judges what render
	// writes.
	for _, op := range render.Operators(f, cluster) {
		if f.Charts.Mode == fleet.ModeManifests {
			if e.OperatorDeployments == nil {
				e.OperatorDeployments = map[string]string{}
			}
			e.OperatorDeployments[op.Namespace+"/"+op.Deployment] = chartLabel(op.Chart, op.Version)
		} else {
			if e.HelmReleases == nil {
				e.HelmReleases = map[string]string{}
			}
			e.HelmReleases[op.Namespace+"/"+op.Chart] = op.Version
		}
	}
	if f.Stack != nil {
		e.Kustomizations = append(e.Kustomizations, "infra-controllers", "infra-configs")
		// Only the services placed on this cluster have a Kustomization here.
		for _, s := range f.ServicesOn(cluster) {
			e.Kustomizations = append(e.Kustomizations, render.AppKustomization(s))
		}
	}
	products := map[string]int{}
	for _, p := range c.Pools {
		products[p.Product]++
	}
	for _, p := range c.Pools {
		e.SharedProduct[p.Name] = products[p.Product] > 1
	}
	return e
}

// labelHelmChart is the label Helm charts put on their objects:
// "<chart>-<chart version>".
const labelHelmChart = "helm.sh/chart"

// chartLabel is the helm.sh/chart label of chart at version, without the
// "v" some charts put before their version ("gpu-operator-v25.3.4" and
// "gpu-operator-25.3.4" are the same chart version).
func chartLabel(chart, version string) string {
	return chart + "-" + strings.TrimPrefix(version, "v")
}

// normalChartLabel is a helm.sh/chart label with the "v" before its
// version removed ("gpu-operator-v25.3.4" → "gpu-operator-25.3.4"). The
// version is what follows the label's last "-v" and a digit: a chart's
// name ends in a letter or digit, never in "-v<digit>" (the Deployment's
// name, which an adopted release changes, says nothing of the chart's).
func normalChartLabel(label string) string {
	if i := strings.LastIndex(label, "-v"); i >= 0 && i+2 < len(label) && label[i+2] >= '0' && label[i+2] <= '9' {
		return label[:i+1] + label[i+2:]
	}
	return label
}
