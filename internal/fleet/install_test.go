package fleet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOperatorInstallTables: the operators as found on a cluster, read
// from [clusters.<name>.gpu-operator] and [clusters.<name>.network-operator]
// (as tables or inline), with the defaults answered for a cluster without
// them, and a release without a Network Operator.
func TestOperatorInstallTables(t *testing.T) {
	f, err := Parse("f.toml", []byte(mustRead(t, "testdata/adopted.toml")))
	if err != nil {
		t.Fatalf("the adopted fleet must parse:\n%v", err)
	}
	type install struct{ GPURelease, GPUNamespace, Mode, NetRelease, NetNamespace string }
	got := map[string]install{}
	for _, name := range f.ClusterNames() {
		c := f.Clusters[name]
		got[name] = install{c.GPUOperatorRelease(), c.GPUOperatorNamespace(), c.DriverManagement(), c.NetworkOperatorRelease(), c.NetworkOperatorNamespace()}
	}
	want := map[string]install{
		"stg":  {"gpu-operator-1712345678", "nvidia-gpu-operator", DriverManagementClusterPolicy, DefaultNetworkOperatorRelease, DefaultNetworkOperatorNamespace},
		"prod": {"gpu-op", DefaultGPUOperatorNamespace, DriverManagementNVIDIADriver, "net-op", "network-operator"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("installs (-want +got):\n%s", diff)
	}
	if f.Releases["r1"].NetworkOperator != "" {
		t.Errorf("r1 has no network-operator, got %q", f.Releases["r1"].NetworkOperator)
	}
	if why := f.Downgrade("r1"); len(why) != 0 {
		t.Errorf("a release without a Network Operator is no downgrade of one with it: %v", why)
	}

	plain, err := Parse("f.toml", []byte(mustRead(t, "testdata/minimal.toml")))
	if err != nil {
		t.Fatal(err)
	}
	c := plain.Clusters["stg"]
	if c.GPUOperator != nil || c.NetworkOperator != nil {
		t.Errorf("no tables, yet %+v %+v", c.GPUOperator, c.NetworkOperator)
	}
	if c.GPUOperatorRelease() != "gpu-operator" || c.GPUOperatorNamespace() != "gpu-operator" || c.NetworkOperatorRelease() != "network-operator" ||
		c.NetworkOperatorNamespace() != "nvidia-network-operator" || c.DriverManagement() != DriverManagementNVIDIADriver {
		t.Errorf("defaults: %s %s %s %s %s", c.GPUOperatorRelease(), c.GPUOperatorNamespace(), c.NetworkOperatorRelease(), c.NetworkOperatorNamespace(), c.DriverManagement())
	}
}

// TestOperatorInstallProblems: every bad operator table is reported at its
// key with file, line and column, all of them at once.
func TestOperatorInstallProblems(t *testing.T) {
	base := mustRead(t, "testdata/adopted.toml")
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{
			name: "unknown keys in both tables",
			edit: func(s string) string {
				s = strings.Replace(s, `namespace = "nvidia-gpu-operator"`, "namespace = \"nvidia-gpu-operator\"\nreleaseName = \"x\"", 1)
				return strings.Replace(s, `network-operator = { release = "net-op", namespace = "network-operator" }`, `network-operator = { release = "net-op", chart = "network-operator" }`, 1)
			},
			want: []string{
				`f.toml:16:1: clusters.stg.gpu-operator.releaseName: unknown key`,
				`f.toml:43:42: clusters.prod.network-operator.chart: unknown key`,
			},
		},
		{
			name: "wrong type",
			edit: func(s string) string {
				return strings.Replace(s, `driver-management = "clusterpolicy"`, `driver-management = true`, 1)
			},
			want: []string{
				`f.toml:16:21: clusters.stg.gpu-operator.driver-management: wrong type: got a boolean, want a string`,
			},
		},
		{
			name: "a table written as a string",
			edit: func(s string) string {
				return strings.Replace(s, `gpu-operator = { release = "gpu-op" }`, `gpu-operator = "v25.3.4"`, 1)
			},
			want: []string{
				`f.toml:41:16: clusters.prod.gpu-operator: wrong type: got a string, want a table`,
			},
		},
		{
			name: "bad values",
			edit: func(s string) string {
				s = strings.Replace(s, `release = "gpu-operator-1712345678"`, `release = "GPU_Operator"`, 1)
				s = strings.Replace(s, `namespace = "nvidia-gpu-operator"`, `namespace = "nvidia.gpu"`, 1)
				s = strings.Replace(s, `driver-management = "clusterpolicy"`, `driver-management = "ClusterPolicy"`, 1)
				return strings.Replace(s, `{ release = "gpu-op" }`, `{ release = "`+strings.Repeat("a", 54)+`" }`, 1)
			},
			want: []string{
				`f.toml:14:1: clusters.stg.gpu-operator.release: "GPU_Operator" is not a Helm release name: use at most 53 lower-case letters, digits and '-', starting and ending with a letter or digit`,
				`f.toml:15:1: clusters.stg.gpu-operator.namespace: "nvidia.gpu" is not a namespace name: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`,
				`f.toml:16:1: clusters.stg.gpu-operator.driver-management: "ClusterPolicy" is not a driver management mode: use "nvidiadriver" (gpufleet's NVIDIADrivers, one per pool and driver version) or "clusterpolicy" (the ClusterPolicy's one driver DaemonSet, as a default install of the operator runs it)`,
				`f.toml:41:18: clusters.prod.gpu-operator.release: "` + strings.Repeat("a", 54) + `" is not a Helm release name: use at most 53 lower-case letters, digits and '-', starting and ending with a letter or digit`,
			},
		},
		{
			name: "empty values",
			edit: func(s string) string {
				s = strings.Replace(s, `release = "gpu-operator-1712345678"`, `release = ""`, 1)
				return strings.Replace(s, `namespace = "network-operator"`, `namespace = ""`, 1)
			},
			want: []string{
				`f.toml:14:1: clusters.stg.gpu-operator.release: release must not be empty: leave it out for the default "gpu-operator"`,
				`f.toml:42:42: clusters.prod.network-operator.namespace: namespace must not be empty: leave it out for the default "nvidia-network-operator"`,
			},
		},
		{
			name: "driver management on the Network Operator",
			edit: func(s string) string {
				return strings.Replace(s, `namespace = "network-operator" }`, `namespace = "network-operator", driver-management = "nvidiadriver" }`, 1)
			},
			want: []string{
				`f.toml:42:74: clusters.prod.network-operator.driver-management: unknown key: driver management is the GPU Operator's; set it in [clusters.prod.gpu-operator]`,
			},
		},
		{
			name: "clusterpolicy without the gpu-operator actuator",
			edit: func(s string) string {
				return strings.Replace(s, "[policy.clusters.stg]\nactuator = \"gpu-operator\"\n", "", 1)
			},
			want: []string{
				`f.toml:16:1: clusters.stg.gpu-operator.driver-management: driver-management = "clusterpolicy" needs the gpu-operator actuator (the operator's upgrade controller moves the nodes of the ClusterPolicy's one driver DaemonSet): set [policy.clusters.stg] actuator = "gpu-operator"`,
			},
		},
		{
			name: "clusterpolicy with the gpufleet actuator set for its environment",
			edit: func(s string) string {
				return strings.Replace(s, "[policy.clusters.stg]\nactuator = \"gpu-operator\"\n", "[policy.environments.staging]\nactuator = \"gpufleet\"\n", 1)
			},
			want: []string{
				`f.toml:16:1: clusters.stg.gpu-operator.driver-management: driver-management = "clusterpolicy" needs the gpu-operator actuator (the operator's upgrade controller moves the nodes of the ClusterPolicy's one driver DaemonSet): set [policy.clusters.stg] actuator = "gpu-operator"`,
			},
		},
		{
			name: "a malformed network-operator version is still refused",
			edit: func(s string) string {
				return strings.Replace(s, `network-operator = "v26.4.1"`, `network-operator = "26.4"`, 1)
			},
			want: []string{
				`f.toml:7:1: releases.r2.network-operator: "26.4" is not a chart version such as v25.4.0, or "none" for a release that runs no Network Operator`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.edit(base)
			if src == base {
				t.Fatal("the edit changed nothing")
			}
			wantProblems(t, src, tt.want)
		})
	}
}
