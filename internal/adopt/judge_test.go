package adopt

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

func TestJudgeFleet(t *testing.T) {
	tests := []struct {
		name     string
		clusters []Cluster
		opts     Options
		want     *Fleet
		warnings []Reason
	}{{
		name: "two pools of two products",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h100-1", h100, drv570), gpuNode("h100-2", h100, drv570), gpuNode("h200-1", h200, drv570))},
		want: &Fleet{
			Contexts:        []string{"prod-a"},
			ChartRepository: "https://helm.ngc.nvidia.com/nvidia", ChartMode: "helmrelease",
			Release: Release{Name: "gpuop-v25-3-4-drv-570-172-08", GPUOperator: gpuOp, Driver: drv570},
			Clusters: []*FleetCluster{{Name: "prod-a", Context: "prod-a", Environment: "prod", GPUNodes: 3,
				Pools: []*Pool{
					{Name: "h100", Product: h100, Driver: drv570, Nodes: []string{"h100-1", "h100-2"}},
					{Name: "h200", Product: h200, Driver: drv570, Nodes: []string{"h200-1"}},
				},
				GPUOperator: &Install{Deployment: "gpu-operator/gpu-operator", Release: "gpu-operator", Namespace: "gpu-operator", Version: gpuOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("gpu-operator", "gpu-operator"),
					DriverManagement: DriverManagementClusterPolicy, ClusterPolicy: "cluster-policy"},
			}},
			Waves: []Wave{{Name: "prod", Clusters: []string{"prod-a"}}},
		},
	}, {
		name: "MIG and not on one product, the single strategy's product suffix dropped",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("a-1", a100, drv570),
			gpuNode("m-1", a100, drv570).mig("all-1g.10gb"),
			gpuNode("m-2", a100+"-MIG-1g.10gb", drv570).mig("all-1g.10gb"))},
		want: &Fleet{
			Contexts:        []string{"prod-a"},
			ChartRepository: "https://helm.ngc.nvidia.com/nvidia", ChartMode: "helmrelease",
			Release: Release{Name: "gpuop-v25-3-4-drv-570-172-08", GPUOperator: gpuOp, Driver: drv570},
			Clusters: []*FleetCluster{{Name: "prod-a", Context: "prod-a", Environment: "prod", GPUNodes: 3,
				Pools: []*Pool{
					{Name: "a100", Product: a100, Driver: drv570, Nodes: []string{"a-1"}},
					{Name: "a100-mig", Product: a100, MIG: "all-1g.10gb", Driver: drv570, Nodes: []string{"m-1", "m-2"}},
				},
				GPUOperator: &Install{Deployment: "gpu-operator/gpu-operator", Release: "gpu-operator", Namespace: "gpu-operator", Version: gpuOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("gpu-operator", "gpu-operator"),
					DriverManagement: DriverManagementClusterPolicy, ClusterPolicy: "cluster-policy"},
			}},
			Waves: []Wave{{Name: "prod", Clusters: []string{"prod-a"}}},
		},
	}, {
		name: "a pool label keeps its name; generated release names; the Network Operator; NVIDIADriver mode; a staging cluster first",
		clusters: []Cluster{
			func() Cluster {
				c := cluster("prod-b", gpuNode("t-1", h100, drv570).pool("train"), gpuNode("t-2", h100, drv570).pool("train"))
				c.Deployments = []Deployment{gpuOperatorDeployment("nvidia", "gpu-operator-1712345678", gpuOp), networkOperatorDeployment("network", "netop", netOp)}
				c.ClusterPolicies[0].UseNVIDIADriverCRD = true
				return c
			}(),
			func() Cluster {
				c := cluster("stg-1", gpuNode("s-1", h100, drv570))
				c.Deployments = append(c.Deployments, networkOperatorDeployment("nvidia-network-operator", "network-operator", netOp))
				return c
			}(),
		},
		want: &Fleet{
			Contexts:        []string{"prod-b", "stg-1"},
			ChartRepository: "https://helm.ngc.nvidia.com/nvidia", ChartMode: "helmrelease",
			Release: Release{Name: "gpuop-v25-3-4-netop-v25-4-0-drv-570-172-08", GPUOperator: gpuOp, NetworkOperator: netOp, Driver: drv570},
			Clusters: []*FleetCluster{
				{Name: "prod-b", Context: "prod-b", Environment: "prod", GPUNodes: 2,
					Pools: []*Pool{{Name: "train", Labelled: true, Product: h100, Driver: drv570, Nodes: []string{"t-1", "t-2"}}},
					GPUOperator: &Install{Deployment: "nvidia/gpu-operator", Release: "gpu-operator-1712345678", Namespace: "nvidia", Version: gpuOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("nvidia", "gpu-operator-1712345678"),
						DriverManagement: DriverManagementNVIDIADriver, ClusterPolicy: "cluster-policy"},
					NetworkOperator: &Install{Deployment: "network/netop-network-operator", Release: "netop", Namespace: "network", Version: netOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("network", "netop")},
				},
				{Name: "stg-1", Context: "stg-1", Environment: "staging", GPUNodes: 1,
					Pools: []*Pool{{Name: "h100", Product: h100, Driver: drv570, Nodes: []string{"s-1"}}},
					GPUOperator: &Install{Deployment: "gpu-operator/gpu-operator", Release: "gpu-operator", Namespace: "gpu-operator", Version: gpuOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("gpu-operator", "gpu-operator"),
						DriverManagement: DriverManagementClusterPolicy, ClusterPolicy: "cluster-policy"},
					NetworkOperator: &Install{Deployment: "nvidia-network-operator/network-operator", Release: "network-operator", Namespace: "nvidia-network-operator", Version: netOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("nvidia-network-operator", "network-operator")},
				},
			},
			Waves: []Wave{{Name: "staging", Clusters: []string{"stg-1"}}, {Name: "prod", Clusters: []string{"prod-b"}, RequireApproval: true}},
		},
	}, {
		name: "DRA pools beside device-plugin ones: product and driver from the slices where GFD's labels are missing",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h100-1", h100, drv570).byPlugin(), gpuNode("h100-2", h100, drv570).byPlugin(),
			gpuNode("h200-1", h200, drv570).byDRA([]string{"NVIDIA H200"}, sem570),
			gpuNode("h200-2", h200, drv570).noGFD().byDRA([]string{"NVIDIA H200"}, sem570))},
		want: &Fleet{
			Contexts:        []string{"prod-a"},
			ChartRepository: "https://helm.ngc.nvidia.com/nvidia", ChartMode: "helmrelease",
			Release: Release{Name: "gpuop-v25-3-4-drv-570-172-08", GPUOperator: gpuOp, Driver: drv570},
			Clusters: []*FleetCluster{{Name: "prod-a", Context: "prod-a", Environment: "prod", GPUNodes: 4,
				Pools: []*Pool{
					{Name: "h100", Product: h100, Driver: drv570, Nodes: []string{"h100-1", "h100-2"}},
					{Name: "h200", Product: h200, Driver: drv570, DRA: true, Nodes: []string{"h200-1", "h200-2"}},
				},
				GPUOperator: &Install{Deployment: "gpu-operator/gpu-operator", Release: "gpu-operator", Namespace: "gpu-operator", Version: gpuOp, VersionFrom: VersionFromChartLabel, ValuesFrom: secretRecord("gpu-operator", "gpu-operator"),
					DriverManagement: DriverManagementClusterPolicy, ClusterPolicy: "cluster-policy"},
			}},
			Waves: []Wave{{Name: "prod", Clusters: []string{"prod-a"}}},
		},
		// In ClusterPolicy mode the operator's DaemonSet drives h200-2
		// whatever its labels; the product label it lacks is said.
		warnings: []Reason{ReasonProductLabelNeeded},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(recorded(tt.clusters), tt.opts)
			if got.Err() != nil {
				t.Fatalf("problems: %v", got.Err())
			}
			if diff := cmp.Diff(tt.want, got.Fleet); diff != "" {
				t.Errorf("fleet (-want +got):\n%s", diff)
			}
			var reasons []Reason
			for _, w := range got.Warnings {
				reasons = append(reasons, w.Reason)
			}
			if diff := cmp.Diff(tt.warnings, reasons); diff != "" {
				t.Errorf("warnings (-want +got):\n%s\n%v", diff, got.Warnings)
			}
		})
	}
}

// TestJudgePrecompiled: with precompiled drivers, a pool is judged by
// the branch (two builds of 570 are one driver), a cluster building its
// driver beside clusters on precompiled ones is a skew, and the waves come
// from the flags with the conservative gates.
func TestJudgePrecompiled(t *testing.T) {
	pre := func(ctx string, ns ...*nodeB) Cluster {
		c := cluster(ctx, ns...)
		c.ClusterPolicies[0].UsePrecompiled, c.ClusterPolicies[0].DriverVersion = true, "570"
		return c
	}
	r := Judge(recorded([]Cluster{pre("gpu-a", gpuNode("a-1", h100, drv570), gpuNode("a-2", h100, drv570b)), pre("gpu-b", gpuNode("b-1", h100, drv570))}),
		Options{Release: "r2026-06", Waves: []WaveSpec{{Name: "all", Contexts: []string{"gpu-b", "gpu-a"}}}})
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if diff := cmp.Diff(Release{Name: "r2026-06", GPUOperator: gpuOp, Driver: "570", Precompiled: true}, r.Fleet.Release); diff != "" {
		t.Errorf("release (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Wave{{Name: "all", Clusters: []string{"gpu-b", "gpu-a"}, Canary: "gpu-b", PauseAfterCanary: true}}, r.Fleet.Waves); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}

	r = Judge(recorded([]Cluster{pre("gpu-a", gpuNode("a-1", h100, drv570)), cluster("gpu-c", gpuNode("c-1", h100, drv570))}), Options{})
	if len(r.Problems) != 1 || r.Problems[0].Reason != ReasonVersionSkew || !strings.Contains(r.Problems[0].Message, "built on each node on gpu-c; precompiled on gpu-a") {
		t.Errorf("precompiled beside built: %v", r.Problems)
	}
}

func TestJudgeRefuses(t *testing.T) {
	type want struct {
		cluster string
		reason  Reason
		nodes   []string
		// says are words the message must hold: what was found and what to do.
		says []string
	}
	tests := []struct {
		name     string
		clusters []Cluster
		want     []want
	}{{
		name: "a pool whose nodes run different drivers, named by driver",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h-1", h100, drv570), gpuNode("h-2", h100, drv570b), gpuNode("h-3", h100, drv570), gpuNode("l-1", h200, drv570))},
		want: []want{
			{"prod-a", ReasonMixedDrivers, []string{"h-1", "h-2", "h-3"}, []string{"pool h100", "570.124.06 on h-2", "570.172.08 on h-1, h-3", "finish (or undo) the upgrade"}},
			{"prod-a", ReasonDriverPending, []string{"h-2"}, []string{"ClusterPolicy cluster-policy asks for driver 570.172.08", "h-2 runs 570.124.06"}},
		},
	}, {
		name: "NVIDIADrivers gpufleet did not write: refused, as removing them deletes their driver pods at once",
		clusters: []Cluster{func() Cluster {
			c := cluster("prod-a", gpuNode("h-1", h100, drv570))
			c.ClusterPolicies[0].UseNVIDIADriverCRD = true
			c.NVIDIADrivers = []string{"default"}
			return c
		}()},
		want: []want{
			{"prod-a", ReasonForeignNVIDIADrivers, nil, []string{"NVIDIADrivers that gpufleet did not write", "default", "every driver pod at once", "--context"}},
		},
	}, {
		name: "a host-installed driver, and the operator's driver turned off",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h-1", h100, drv570), gpuNode("h-2", h100, drv570).with(v1alpha1.LabelDeployDriver, "pre-installed"),
			gpuNode("h-3", h100, drv570).with(v1alpha1.LabelDeployDriver, "false"))},
		want: []want{
			{"prod-a", ReasonPreinstalledDriver, []string{"h-2"}, []string{"node h-2 has a driver installed on the host", "nvidia.com/gpu.deploy.driver=pre-installed", "--context"}},
			{"prod-a", ReasonDriverOff, []string{"h-3"}, []string{"nvidia.com/gpu.deploy.driver=false"}},
		},
	}, {
		name: "nodes in the middle of an operator upgrade, by state; done and unset are fine",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h-1", h100, drv570),
			gpuNode("h-2", h100, drv570).with(v1alpha1.LabelOperatorUpgradeState, "drain-required"),
			gpuNode("h-3", h100, drv570).with(v1alpha1.LabelOperatorUpgradeState, "upgrade-failed"),
			gpuNode("h-4", h100, drv570).with(v1alpha1.LabelOperatorUpgradeState, "drain-required"),
			gpuNode("h-5", h100, drv570).without(v1alpha1.LabelOperatorUpgradeState),
			gpuNode("h-6", h100, drv570).with(v1alpha1.LabelOperatorUpgradeState, ""))},
		want: []want{
			{"prod-a", ReasonUpgrading, []string{"h-2", "h-4"}, []string{"nodes h-2, h-4 are in the middle of a GPU Operator driver upgrade", "nvidia.com/gpu-driver-upgrade-state=drain-required", "upgrade-done"}},
			{"prod-a", ReasonUpgrading, []string{"h-3"}, []string{"upgrade-failed"}},
		},
	}, {
		name: "a GPU node without a product (no driver loaded), and one whose MIG layout is being applied",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h-1", h100, drv570),
			gpuNode("h-2", h100, drv570).without(v1alpha1.LabelGFDProduct).without(v1alpha1.LabelGFDDriverFull),
			gpuNode("h-3", a100, drv570).mig("all-1g.10gb").with(v1alpha1.LabelMIGConfigState, "pending"),
			gpuNode("h-4", a100, drv570).mig("custom-layout"),
			gpuNode("h-5", h100, "").without(v1alpha1.LabelGFDDriverMajor))},
		want: []want{
			{"prod-a", ReasonUnplaced, []string{"h-2"}, []string{"GPU node h-2 has no nvidia.com/gpu.product label", "driver is not loaded"}},
			{"prod-a", ReasonMIGChanging, []string{"h-3"}, []string{"nvidia.com/mig.config.state=pending"}},
			{"prod-a", ReasonMIGLayout, []string{"h-4"}, []string{"all-balanced"}},
			{"prod-a", ReasonNoDriverVersion, []string{"h-5"}, []string{"GPU node h-5 reports no driver version"}},
		},
	}, {
		name: "clusters on different operator and driver versions, one without the Network Operator",
		clusters: []Cluster{
			func() Cluster {
				c := cluster("a", gpuNode("a-1", h100, drv570))
				c.Deployments = append(c.Deployments, networkOperatorDeployment("nvidia-network-operator", "network-operator", netOp))
				return c
			}(),
			func() Cluster {
				c := cluster("b", gpuNode("b-1", h100, drv580))
				c.Deployments = []Deployment{gpuOperatorDeployment("gpu-operator", "gpu-operator", "v25.10.1")}
				c.ClusterPolicies[0].DriverVersion = drv580
				return c
			}(),
			cluster("c", gpuNode("c-1", h100, drv570)),
		},
		want: []want{
			{"", ReasonVersionSkew, nil, []string{"different GPU Operator versions: v25.10.1 on b; v25.3.4 on a, c", "one fleet file has one stable release"}},
			{"", ReasonVersionSkew, nil, []string{"different Network Operator versions: no Network Operator on b, c; v25.4.0 on a"}},
			{"", ReasonVersionSkew, nil, []string{"different drivers: 570.172.08 on a/h100, c/h100; 580.95.05 on b/h100", "gpufleet init --context"}},
		},
	}, {
		name: "no GPU Operator; two of them; one Helm did not install; a context that is no cluster name; no GPU nodes",
		clusters: []Cluster{
			func() Cluster {
				c := cluster("none", gpuNode("n-1", h100, drv570))
				c.Deployments = nil
				return c
			}(),
			func() Cluster {
				c := cluster("two", gpuNode("t-1", h100, drv570))
				c.Deployments = append(c.Deployments, gpuOperatorDeployment("other", "gpu-operator", gpuOp))
				return c
			}(),
			func() Cluster {
				c := cluster("olm", gpuNode("o-1", h100, drv570))
				d := &c.Deployments[0]
				delete(d.Labels, LabelInstance)
				delete(d.Labels, v1alpha1.LabelHelmChart)
				d.Annotations = nil
				return c
			}(),
			cluster("arn:aws:eks:eu-west-1:1:cluster/Prod", gpuNode("p-1", h100, drv570)),
			cluster("cpu-only"),
		},
		want: []want{
			{"arn:aws:eks:eu-west-1:1:cluster/Prod", ReasonClusterName, nil, []string{"is not a valid cluster name", "kubectl config rename-context arn:aws:eks:eu-west-1:1:cluster/Prod NEW-NAME"}},
			{"cpu-only", ReasonNoGPUNodes, nil, []string{"no GPU nodes"}},
			{"none", ReasonNoGPUOperator, nil, []string{"no GPU Operator found", "app.kubernetes.io/component=gpu-operator"}},
			{"olm", ReasonOperatorUnreadable, nil, []string{"Deployment gpu-operator/gpu-operator (gpu-operator) names no Helm release"}},
			{"two", ReasonSeveralOperators, nil, []string{"2 Deployments of the gpu-operator chart: gpu-operator/gpu-operator, other/gpu-operator"}},
		},
	}, {
		name: "pool labels that do not make pools",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("h-1", h100, drv570).pool("train"), gpuNode("h-2", h100, drv570),
			gpuNode("x-1", h200, drv570).pool("mixed"), gpuNode("x-2", a100, drv570).pool("mixed"),
			gpuNode("y-1", h200, drv570).pool("Big_Pool"))},
		want: []want{
			{"prod-a", ReasonPoolLabel, []string{"y-1"}, []string{`gpufleet.io/pool="Big_Pool", which is not a valid pool name`}},
			{"prod-a", ReasonPoolLabel, []string{"x-1", "x-2"}, []string{`pool "mixed" (gpufleet.io/pool) holds different GPUs or MIG layouts: NVIDIA-A100-SXM4-80GB on x-2; NVIDIA-H200 on x-1`}},
			{"prod-a", ReasonPoolLabel, []string{"h-2"}, []string{`node h-2 (NVIDIA-H100-80GB-HBM3) carry no gpufleet.io/pool, while other nodes of the same GPU carry "train"`, "kubectl label node h-2 gpufleet.io/pool=train"}},
		},
	}, {
		name: "DRA: a pool of device-plugin and DRA nodes, a node offering both, slices that disagree or name no product",
		clusters: []Cluster{cluster("prod-a",
			gpuNode("m-1", h100, drv570).byPlugin(),
			gpuNode("m-2", h100, drv570).byDRA([]string{"NVIDIA H100 80GB HBM3"}, sem570),
			gpuNode("m-3", h100, drv570).noGFD().byDRA([]string{"NVIDIA H100 80GB HBM3"}, sem570),
			gpuNode("b-1", h200, drv570).byPlugin().byDRA([]string{"NVIDIA H200"}, sem570),
			gpuNode("x-1", h200, drv570).noGFD().byDRA([]string{"NVIDIA H200", "NVIDIA H100 80GB HBM3"}, sem570),
			gpuNode("y-1", a100, drv570).byDRA([]string{"NVIDIA A100-SXM4-80GB"}, "580.95.5"))},
		want: []want{
			{"prod-a", ReasonUnplaced, []string{"x-1"}, []string{"GPU node x-1 has no nvidia.com/gpu.product label, and its ResourceSlices of gpu.nvidia.com name no one GPU product"}},
			{"prod-a", ReasonDRADisagrees, []string{"y-1"}, []string{"y-1: nvidia.com/cuda.driver-version.full says 570.172.08, its ResourceSlices of gpu.nvidia.com (y-1-gpu.nvidia.com-abcde) say 580.95.5", "delete its pod"}},
			{"prod-a", ReasonMixedAllocation, []string{"m-1", "m-2", "m-3"}, []string{
				"pool h100 mixes nodes whose GPUs the device plugin offers (allocatable nvidia.com/gpu: m-1) with nodes whose GPUs DRA hands out (ResourceSlices of gpu.nvidia.com: m-2, m-3)",
				"not supported yet", "no policy says how",
				"split the pool by labels, each kind a pool of its own: kubectl --context prod-a label node --overwrite m-1 gpufleet.io/pool=h100; kubectl --context prod-a label node --overwrite m-2 m-3 gpufleet.io/pool=h100-dra"}},
			{"prod-a", ReasonMixedAllocation, []string{"b-1"}, []string{"pool h200 mixes nodes that offer their GPUs both ways (b-1)", "turn the device plugin or the DRA kubelet plugin off on b-1"}},
		},
	}, {
		name: "NVIDIADriver mode: a node placed by its DRA slices lacks the label render's NVIDIADrivers select",
		clusters: []Cluster{func() Cluster {
			c := cluster("prod-a", gpuNode("h-1", h200, drv570).byDRA([]string{"NVIDIA H200"}, sem570),
				gpuNode("h-2", h200, drv570).noGFD().byDRA([]string{"NVIDIA H200"}, sem570))
			c.ClusterPolicies[0].UseNVIDIADriverCRD = true
			return c
		}()},
		want: []want{
			{"prod-a", ReasonProductLabelNeeded, []string{"h-2"}, []string{
				"node h-2 has no nvidia.com/gpu.product (GPU Feature Discovery does not run there): init placed it by its ResourceSlices of gpu.nvidia.com (NVIDIA-H200 in pool h200)",
				"would leave it without a driver", "kubectl --context prod-a label node h-2 nvidia.com/gpu.product=NVIDIA-H200"}},
		},
	}, {
		name: "no ClusterPolicy; its driver off",
		clusters: []Cluster{
			func() Cluster {
				c := cluster("a", gpuNode("a-1", h100, drv570))
				c.ClusterPolicies = nil
				return c
			}(),
			func() Cluster {
				c := cluster("b", gpuNode("b-1", h100, drv570))
				off := false
				c.ClusterPolicies[0].DriverEnabled = &off
				return c
			}(),
		},
		want: []want{
			{"a", ReasonClusterPolicy, nil, []string{"no ClusterPolicy"}},
			{"b", ReasonClusterPolicy, nil, []string{"spec.driver.enabled=false"}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Judge(recorded(tt.clusters), Options{})
			if r.Err() == nil {
				t.Fatal("no problems")
			}
			var got []want
			for _, p := range r.Problems {
				got = append(got, want{p.Cluster, p.Reason, p.Nodes, nil})
			}
			var expect []want
			for _, w := range tt.want {
				expect = append(expect, want{w.cluster, w.reason, w.nodes, nil})
			}
			if diff := cmp.Diff(expect, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("problems (-want +got):\n%s\n%v", diff, r.Err())
			}
			for i, w := range tt.want {
				for _, s := range w.says {
					if !strings.Contains(r.Problems[i].Message, s) {
						t.Errorf("problem %d does not say %q:\n%s", i, s, r.Problems[i].Message)
					}
				}
			}
		})
	}
}

// TestJudgePoolLabelsNeeded: pools of one product are told apart by
// gpufleet.io/pool in render's NVIDIADrivers, so a cluster in NVIDIADriver
// mode whose nodes lack it gets the commands that label them; in
// ClusterPolicy mode nothing selects by pool, and nothing is said.
func TestJudgePoolLabelsNeeded(t *testing.T) {
	c := cluster("prod-a", gpuNode("a-1", a100, drv570), gpuNode("m-1", a100, drv570).mig("all-1g.10gb"), gpuNode("h-1", h100, drv570))
	if r := Judge(recorded([]Cluster{c}), Options{}); len(r.Warnings) != 0 {
		t.Errorf("ClusterPolicy mode: %v", r.Warnings)
	}
	c.ClusterPolicies[0].UseNVIDIADriverCRD = true
	r := Judge(recorded([]Cluster{c}), Options{})
	if len(r.Warnings) != 1 {
		t.Fatalf("NVIDIADriver mode: %v", r.Warnings)
	}
	w := r.Warnings[0]
	if w.Reason != ReasonPoolLabelsNeeded || !slices.Equal(w.Nodes, []string{"a-1", "m-1"}) ||
		!strings.Contains(w.Message, "kubectl --context prod-a label node a-1 gpufleet.io/pool=a100; kubectl --context prod-a label node m-1 gpufleet.io/pool=a100-mig") {
		t.Errorf("%+v", w)
	}
}

// TestJudgeProductLabelNeeded: in ClusterPolicy mode, nodes placed by
// their DRA slices' productName are written, with the labels the
// DriverRollout and the gate select them by.
func TestJudgeProductLabelNeeded(t *testing.T) {
	c := cluster("prod-a", gpuNode("h-1", h200, drv570).noGFD().byDRA([]string{"NVIDIA H200"}, sem570),
		gpuNode("h-2", h200, drv570).noGFD().byDRA([]string{"NVIDIA H200"}, sem570),
		gpuNode("l-1", "NVIDIA-L40S", drv570).noGFD().byDRA([]string{"NVIDIA L40S"}, sem570))
	r := Judge(recorded([]Cluster{c}), Options{})
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(r.Warnings) != 1 {
		t.Fatalf("warnings: %v", r.Warnings)
	}
	w := r.Warnings[0]
	for _, s := range []string{
		"nodes h-1, h-2, l-1 have no nvidia.com/gpu.product",
		"NVIDIA-H200 in pool h200; NVIDIA-L40S in pool l40s",
		"until they carry it, they are not rolled and the gate finds them missing",
		"kubectl --context prod-a label node h-1 h-2 nvidia.com/gpu.product=NVIDIA-H200; kubectl --context prod-a label node l-1 nvidia.com/gpu.product=NVIDIA-L40S",
	} {
		if !strings.Contains(w.Message, s) {
			t.Errorf("the warning does not say %q:\n%s", s, w.Message)
		}
	}
	if w.Reason != ReasonProductLabelNeeded || !slices.Equal(w.Nodes, []string{"h-1", "h-2", "l-1"}) {
		t.Errorf("%+v", w)
	}
}

// TestJudgeVersionFromImage: a chart installed without its chart label
// (or with a chart renamed) is still found by its component label, and its
// version read from the operator's image tag.
func TestJudgeVersionFromImage(t *testing.T) {
	c := cluster("prod-a", gpuNode("h-1", h100, drv570))
	d := &c.Deployments[0]
	d.Labels[v1alpha1.LabelHelmChart] = "nvidia-gpu-operator-custom"
	d.Containers = []Container{{Name: "init", Image: "busybox:1.36"}, {Name: "gpu-operator", Image: "registry.example:5000/nvidia/gpu-operator:v25.3.4@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
	r := Judge(recorded([]Cluster{c}), Options{})
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if op := r.Fleet.Clusters[0].GPUOperator; op.Version != gpuOp || op.VersionFrom != VersionFromImage {
		t.Errorf("version %q from %q", op.Version, op.VersionFrom)
	}
	d.Containers[1].Image = "registry.example:5000/nvidia/gpu-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	r = Judge(recorded([]Cluster{c}), Options{})
	if len(r.Problems) != 1 || r.Problems[0].Reason != ReasonOperatorUnreadable || !strings.Contains(r.Problems[0].Message, "cannot tell the chart version") {
		t.Errorf("a digest only: %v", r.Problems)
	}
}
