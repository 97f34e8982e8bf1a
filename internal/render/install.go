package render

import (
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Chart names of the operators, which also name their HelmRelease objects.
const (
	GPUOperatorChart     = "gpu-operator"
	NetworkOperatorChart = "network-operator"
)

// Operator is one operator chart as render installs it on a cluster: where
// and under which Helm release name, as the cluster's
// [clusters.<name>.gpu-operator] and [clusters.<name>.network-operator]
// tables say (an install adopted as found) or else the defaults.
type Operator struct {
	// Chart is the chart's name (GPUOperatorChart, NetworkOperatorChart).
	// The HelmRelease object is named after it whatever the release.
	Chart string
	// Version is the chart version of the release the cluster runs.
	Version string
	// Release is the Helm release name: the HelmRelease's spec.releaseName
	// when the install is adopted, the name the chart is rendered under in
	// the manifests mode.
	Release string
	// Namespace holds the HelmRelease, the release and the operator.
	Namespace string
	// Deployment is the operator's own Deployment in Namespace: the
	// operators step's health check in the manifests mode, and what the
	// gate judges there.
	Deployment string
	// Adopted says the fleet file names the install: an operator gpufleet
	// found running rather than one it installed.
	Adopted bool
}

// Operators are the operators cluster runs as the fleet file stands: the
// GPU Operator, then the Network Operator when the cluster's release has
// one. Nil for a cluster f does not have.
func Operators(f *fleet.Fleet, cluster string) []Operator {
	c := f.Clusters[cluster]
	if c == nil {
		return nil
	}
	return operatorInstalls(c, f.ReleaseFor(cluster))
}

func operatorInstalls(c *fleet.Cluster, rel *fleet.Release) []Operator {
	ops := []Operator{{
		Chart:     GPUOperatorChart,
		Version:   rel.GPUOperator,
		Release:   c.GPUOperatorRelease(),
		Namespace: c.GPUOperatorNamespace(),
		// templates/operator.yaml names it so in every chart version
		// gpufleet knows (v24.6 to v26.7), whatever the release's name.
		Deployment: GPUOperatorChart,
		Adopted:    c.GPUOperator != nil,
	}}
	if rel.RunsNetworkOperator() {
		ops = append(ops, Operator{
			Chart:      NetworkOperatorChart,
			Version:    rel.NetworkOperator,
			Release:    c.NetworkOperatorRelease(),
			Namespace:  c.NetworkOperatorNamespace(),
			Deployment: helmFullname(c.NetworkOperatorRelease(), NetworkOperatorChart),
			Adopted:    c.NetworkOperator != nil,
		})
	}
	return ops
}

// helmFullname is the name a chart's "fullname" helper gives its objects
// for release (the Network Operator's network-operator.fullname, as every
// chart `helm create` made): the release name when it holds the chart's,
// else release-chart, at most 63 characters without a trailing '-'.
func helmFullname(release, chart string) string {
	name := release
	if !strings.Contains(release, chart) {
		name = release + "-" + chart
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimSuffix(name, "-")
}

// clusterPolicyManaged reports whether the cluster's GPU driver stays with
// the operator's ClusterPolicy (fleet.DriverManagementClusterPolicy): one
// driver DaemonSet for the cluster, no NVIDIADriver, the gpu-operator
// actuator (the fleet file sees to it).
func clusterPolicyManaged(c *fleet.Cluster) bool {
	return c.DriverManagement() == fleet.DriverManagementClusterPolicy
}

// movesDriver reports whether the cluster's DriverRollout moves the driver:
// its target differs from its previous version, or it is aborted (its nodes
// roll back). It is the one rule for when the operator's own automatic
// upgrade is on, on the gpu-operator actuator: see upgradePolicy.
func (p clusterPlan) movesDriver() bool {
	return p.abort || p.rollout.Driver != p.rollbackTo.Driver
}
