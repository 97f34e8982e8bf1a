package fleet

import (
	"fmt"
	"regexp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// ofedVersionForms are the OFED driver versions the Network Operator's
// admission webhook accepts (NicClusterPolicy spec.ofedDriver.version,
// isValidOFEDVersion in Mellanox/network-operator's
// api/v1alpha1/validator), from the operator version that introduced each
// form, oldest first. The webhook is off in a default chart install, but
// a version it would refuse is one the operator's own tooling never
// meant: gpufleet refuses it offline, at the release's key.
var ofedVersionForms = []struct {
	since   versions.Version
	pattern *regexp.Regexp
	example string
}{
	// v24.1.0: "23.10-0.2.2.0".
	{versions.MustParse("0.0.0"), regexp.MustCompile(`^(\d+\.\d+-\d+(\.\d+)*)$`), "23.10-0.2.2.0"},
	// v24.1.1 to v25.4.x: a trailing "-N" build, "25.04-0.6.1.0-2".
	{versions.MustParse("24.1.1"), regexp.MustCompile(`^(\d+\.\d+-\d+(\.\d+)*(-\d+)?)$`), "25.04-0.6.1.0-2"},
	// v25.7.x: also the DOCA prefix, "doca3.1.0-25.07-0.6.6.0-0".
	{versions.MustParse("25.7.0"), regexp.MustCompile(`^(doca\d+\.\d+\.\d+-\d+\.\d+-\d+\.\d+\.\d+\.\d+-\d+|\d+\.\d+-\d+(\.\d+)*(-\d+)?)$`), "doca3.1.0-25.07-0.6.6.0-0"},
	// v25.10.0 on (v26.4.1 too): also a digest, a DOCA minor without
	// patch, and kernel-specific suffixes.
	{versions.MustParse("25.10.0"), regexp.MustCompile(`^(sha256:[a-fA-F0-9]{64}|doca\d+\.\d+(\.\d+)?-\d+\.\d+-\d+\.\d+\.\d+\.\d+-\d+(-[\w\.\-]+)*|\d+\.\d+-\d+(\.\d+)*(-\d+)?(-[\w\.\-]+)*)$`), "doca3.2.0-25.10-1.2.8.0-2"},
}

// OFEDVersionForm returns the pattern the Network Operator at
// networkOperator (a chart version such as v25.4.0) accepts an OFED driver
// version in, and an example of it; nil when the version cannot be read.
func OFEDVersionForm(networkOperator string) (*regexp.Regexp, string) {
	v, err := versions.Parse(networkOperator)
	if err != nil {
		return nil, ""
	}
	// A pre-release counts as its release: v25.10.0-rc.1 has v25.10.0's
	// webhook.
	core := v.Release()
	var pattern *regexp.Regexp
	var example string
	for _, f := range ofedVersionForms {
		if core.AtLeast(f.since) {
			pattern, example = f.pattern, f.example
		}
	}
	return pattern, example
}

// NoNetworkOperator is what a release's network-operator says when the
// release runs no Network Operator on purpose: the clusters it reaches lose
// the one they run.
const NoNetworkOperator = "none"

// RunsNetworkOperator reports whether the clusters on r run the Network
// Operator: r names its version, rather than "none" or nothing. Every
// reader of the release (render, the charts validate loads, the messages)
// asks this, so that "none" and a release without the key mean the same.
func (r *Release) RunsNetworkOperator() bool {
	return r.NetworkOperator != "" && r.NetworkOperator != NoNetworkOperator
}

// NetworkOperatorLeftOut says why r may not reach the clusters as it is
// written: it leaves network-operator out while a release the clusters run
// now (the stable one, or the one being rolled out) runs the Network
// Operator, which r would remove from every cluster it reaches without a
// word. "" when r names a version or "none", or no such release runs one
// (a fleet that never had a Network Operator needs no "none").
func (f *Fleet) NetworkOperatorLeftOut(r *Release) string {
	if r == nil || r.NetworkOperator != "" {
		return ""
	}
	for _, name := range f.reachingReleases() {
		o := f.Releases[name]
		if o == nil || o == r || !o.RunsNetworkOperator() {
			continue
		}
		role := "the stable release"
		if name != f.Promotion.Stable {
			role = "the release being rolled out"
		}
		return fmt.Sprintf("network-operator is left out of release %s, but the clusters run network-operator %s (%s, %s): rolling %s out would remove it from every cluster it reaches; name the version to keep, or write network-operator = %q to remove it on purpose",
			r.Name, o.NetworkOperator, o.Name, role, r.Name, NoNetworkOperator)
	}
	return ""
}

// validateNetworkOperatorKept refuses a rollout whose release leaves
// network-operator out while the stable release runs the Network Operator
// (see NetworkOperatorLeftOut; gpufleet start refuses to begin one). An
// aborted rollout sends its clusters back to the stable release, which
// removes nothing the stable release runs.
func (f *Fleet) validateNetworkOperatorKept(probs *problemList) {
	ro := f.Promotion.Rollout
	if ro == nil || ro.Aborted {
		return
	}
	r := f.Releases[ro.Release]
	key := joinKey("releases", ro.Release)
	if r == nil || probs.pos.has(key+".network-operator") {
		return // reported by validatePromotion, or as an empty value
	}
	if why := f.NetworkOperatorLeftOut(r); why != "" {
		probs.add(key, "%s", why)
	}
}

// checkOFEDDriver checks a release's OFED driver version: it needs the
// Network Operator, whose NicClusterPolicy carries it, and the form that
// operator version's webhook accepts.
func checkOFEDDriver(probs *problemList, key string, r *Release) {
	if r.OFEDDriver == "" {
		return
	}
	if !r.RunsNetworkOperator() {
		probs.add(key+".ofed-driver", "ofed-driver needs network-operator: the OFED driver is the Network Operator's (its NicClusterPolicy), and the release installs none")
		return
	}
	pattern, example := OFEDVersionForm(r.NetworkOperator)
	if pattern == nil {
		return // network-operator is reported as it is
	}
	if !pattern.MatchString(r.OFEDDriver) {
		probs.add(key+".ofed-driver", "%q is not an OFED driver version Network Operator %s accepts (its webhook checks %s), e.g. %q", r.OFEDDriver, r.NetworkOperator, pattern, example)
	}
}

// checkPoolNetwork checks a pool's network keys: GPUDirect RDMA needs the
// Network Operator's OFED driver on the pool's nodes.
func checkPoolNetwork(probs *problemList, pkey string, p *Pool) {
	if p.GPUDirectRDMA && !p.ManagedNICs {
		probs.add(pkey+".gpudirect-rdma", "gpudirect-rdma needs managed-nics = true: GPUDirect RDMA builds the GPU driver against the Network Operator's OFED driver, which runs only on pools whose NICs it manages")
	}
}

// validateOFEDActuator refuses managed NICs on a cluster whose nodes the
// GPU Operator's upgrade controller moves (the gpu-operator actuator) once
// a release that can reach the cluster (the stable one or the one being
// rolled out) names an OFED driver: render would give its DriverRollout
// spec.ofed, which the DriverRollout's schema refuses on that actuator, as
// the two operators' upgrade controllers cannot share one drain. Each such
// pool is reported at its managed-nics key. It runs after validatePolicy,
// which resolves each cluster's actuator.
func (f *Fleet) validateOFEDActuator(probs *problemList) {
	var ofed *Release
	for _, name := range f.reachingReleases() {
		if r := f.Releases[name]; r != nil && r.OFEDDriver != "" {
			ofed = r
			break
		}
	}
	if ofed == nil {
		return
	}
	for _, name := range f.ClusterNames() {
		if f.policies[name].Actuator != v1alpha1.ActuatorGPUOperator {
			continue
		}
		for i, p := range f.Clusters[name].Pools {
			if !p.ManagedNICs {
				continue
			}
			probs.add(fmt.Sprintf("%s.pools[%d].managed-nics", joinKey("clusters", name), i),
				"managed-nics needs the %q actuator when a release names an ofed-driver (%q names %q), not %q (%s): the GPU Operator's and the Network Operator's upgrade controllers each cordon, drain and uncordon a node on their own, so one maintenance for both drivers cannot be had through them",
				v1alpha1.ActuatorGPUFleet, ofed.Name, ofed.OFEDDriver, v1alpha1.ActuatorGPUOperator, f.policyKeyFor(name, "actuator"))
		}
	}
}

// reachingReleases are the releases a cluster's DriverRollout may carry as
// the fleet file stands: the stable release and the one being rolled out.
func (f *Fleet) reachingReleases() []string {
	names := []string{f.Promotion.Stable}
	if r := f.Promotion.Rollout; r != nil && r.Release != f.Promotion.Stable {
		names = append(names, r.Release)
	}
	return names
}

// ManagesNICs says a pool of the cluster has NICs the Network Operator
// manages (Pool.ManagedNICs): render writes the cluster a NicClusterPolicy
// when its release names an OFED driver.
func (c *Cluster) ManagesNICs() bool {
	for _, p := range c.Pools {
		if p.ManagedNICs {
			return true
		}
	}
	return false
}

// UsesGPUDirectRDMA says a pool of the cluster uses GPUDirect RDMA
// (Pool.GPUDirectRDMA): the cluster's GPU Operator runs with driver.rdma.
func (c *Cluster) UsesGPUDirectRDMA() bool {
	for _, p := range c.Pools {
		if p.GPUDirectRDMA {
			return true
		}
	}
	return false
}
