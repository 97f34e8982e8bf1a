package adopt

import (
	"maps"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
)

// The fixtures of the tests: GPU nodes labelled as GPU Feature Discovery
// and the GPU Operator label them, and an operator installed as the
// v25.3.4 chart installs it.

const (
	h100     = "NVIDIA-H100-80GB-HBM3"
	h200     = "NVIDIA-H200"
	a100     = "NVIDIA-A100-SXM4-80GB"
	a100s    = "NVIDIA-A100-SXM4-40GB"
	drv570   = "570.172.08"
	sem570   = "570.172.8" // drv570 as a DRA driver's semver attribute writes it
	drv570b  = "570.124.06"
	drv580   = "580.95.05"
	gpuOp    = "v25.3.4"
	netOp    = "v25.4.0"
	release0 = "gpu-operator"
)

// nodeB builds a GPU node.
type nodeB struct{ n Node }

// gpuNode is a node with a loaded driver: GFD's product, count and driver
// labels, the operator's gpu.present and a finished upgrade.
func gpuNode(name, product, driver string) *nodeB {
	major, _, _ := cutDot(driver)
	return &nodeB{Node{Name: name, Labels: map[string]string{
		v1alpha1.LabelGPUPresent:           "true",
		v1alpha1.LabelGFDProduct:           product,
		v1alpha1.LabelGFDCount:             "8",
		v1alpha1.LabelGFDDriverFull:        driver,
		v1alpha1.LabelGFDDriverMajor:       major,
		v1alpha1.LabelGFDMIGCapable:        "true",
		v1alpha1.LabelMIGConfig:            MIGDisabled,
		v1alpha1.LabelMIGConfigState:       MIGStateSuccess,
		v1alpha1.LabelOperatorUpgradeState: v1alpha1.OperatorStateDone,
		v1alpha1.LabelDeployDriver:         "true",
	}}}
}

func cutDot(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func (b *nodeB) with(k, v string) *nodeB {
	b.n.Labels[k] = v
	return b
}

func (b *nodeB) without(k string) *nodeB {
	delete(b.n.Labels, k)
	return b
}

// mig partitions the node's GPUs; under the single strategy GFD adds the
// profile to the product.
func (b *nodeB) mig(layout string) *nodeB { return b.with(v1alpha1.LabelMIGConfig, layout) }

func (b *nodeB) pool(p string) *nodeB { return b.with(v1alpha1.LabelPool, p) }

// byDRA has NVIDIA's GPU DRA driver publish the node's GPUs, products
// as NVML names them ("NVIDIA H100 80GB HBM3") and driver versions in
// semver (570.172.8), in one slice.
func (b *nodeB) byDRA(products []string, versions ...string) *nodeB {
	b.n.DRA = &dra.Node{Name: b.n.Name, Slices: []string{b.n.Name + "-gpu.nvidia.com-abcde"}, Devices: 8, Products: products, DriverVersions: versions}
	return b
}

// byPlugin has the device plugin offer the node's GPUs.
func (b *nodeB) byPlugin() *nodeB {
	b.n.DevicePluginGPUs = 8
	return b
}

// noGFD takes GPU Feature Discovery's product and driver labels away.
func (b *nodeB) noGFD() *nodeB {
	return b.without(v1alpha1.LabelGFDProduct).without(v1alpha1.LabelGFDDriverFull).without(v1alpha1.LabelGFDDriverMajor)
}

func (b *nodeB) node() Node {
	return Node{Name: b.n.Name, Labels: maps.Clone(b.n.Labels), DRA: b.n.DRA, DevicePluginGPUs: b.n.DevicePluginGPUs}
}

// gpuOperatorDeployment is the GPU Operator's Deployment as the chart at
// version installs it as release in namespace (templates/operator.yaml,
// _helpers.tpl's gpu-operator.labels).
func gpuOperatorDeployment(namespace, release, version string) Deployment {
	return Deployment{Namespace: namespace, Name: "gpu-operator",
		Labels: map[string]string{
			"app.kubernetes.io/name":                   "gpu-operator",
			v1alpha1.LabelHelmChart:                    "gpu-operator-" + version,
			LabelInstance:                              release,
			"app.kubernetes.io/version":                version,
			v1alpha1.LabelManagedBy:                    "Helm",
			v1alpha1.LabelComponent:                    "gpu-operator",
			"nvidia.com/gpu-driver-upgrade-drain.skip": "true",
		},
		Annotations: map[string]string{AnnotationReleaseName: release, AnnotationReleaseNamespace: namespace},
		Containers:  []Container{{Name: "gpu-operator", Image: "nvcr.io/nvidia/gpu-operator:" + version}},
	}
}

// networkOperatorDeployment is the Network Operator's Deployment as its
// chart installs it (name <release>-network-operator unless the release
// holds the chart name).
func networkOperatorDeployment(namespace, release, version string) Deployment {
	name := release
	if release != "network-operator" {
		name = release + "-network-operator"
	}
	return Deployment{Namespace: namespace, Name: name,
		Labels: map[string]string{
			v1alpha1.LabelHelmChart:  "network-operator-" + version[1:],
			"app.kubernetes.io/name": "network-operator",
			LabelInstance:            release,
			v1alpha1.LabelManagedBy:  "Helm",
			"control-plane":          release + "-controller",
		},
		Annotations: map[string]string{AnnotationReleaseName: release, AnnotationReleaseNamespace: namespace},
		Containers:  []Container{{Name: "network-operator", Image: "nvcr.io/nvidia/cloud-native/network-operator:" + version}},
	}
}

// clusterPolicy is the chart's ClusterPolicy in its default mode.
func clusterPolicy(driver string) ClusterPolicy {
	return ClusterPolicy{Name: "cluster-policy", DriverVersion: driver, State: "ready"}
}

// cluster is a cluster with the GPU Operator installed by the chart in
// its default mode, as release "gpu-operator" in namespace gpu-operator,
// ClusterPolicy on drv570.
func cluster(ctx string, nodes ...*nodeB) Cluster {
	c := Cluster{Context: ctx,
		Deployments:     []Deployment{gpuOperatorDeployment("gpu-operator", release0, gpuOp)},
		ClusterPolicies: []ClusterPolicy{clusterPolicy(drv570)},
	}
	for _, n := range nodes {
		c.Nodes = append(c.Nodes, n.node())
	}
	return c
}

// h100s are n H100 nodes named prefix-1… on driver.
func nodes(prefix, product, driver string, n int) []*nodeB {
	var out []*nodeB
	for i := 1; i <= n; i++ {
		out = append(out, gpuNode(prefix+"-"+itoa(i), product, driver))
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// recordOf is the record of release in namespace as Helm keeps it after
// an install with values (nil: the chart's defaults alone).
func recordOf(namespace, release string, values map[string]any) HelmRelease {
	return HelmRelease{Namespace: namespace, Name: release, Record: secretRecord(namespace, release), Revision: 1, Values: values}
}

func secretRecord(namespace, release string) string {
	return "Secret " + namespace + "/sh.helm.release.v1." + release + ".v1"
}

// recorded gives each cluster of cs that has none a Helm release record
// for each of its operator Deployments, without values of its own, as Read
// finds a release installed with the chart's defaults.
func recorded(cs []Cluster) []Cluster {
	out := make([]Cluster, len(cs))
	for i, c := range cs {
		if c.Releases == nil {
			for _, d := range c.Deployments {
				if ns, rel, err := releaseOf(d); err == nil {
					c.Releases = append(c.Releases, recordOf(ns, rel, nil))
				}
			}
		}
		out[i] = c
	}
	return out
}
