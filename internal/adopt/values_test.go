package adopt

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestJudgeReleaseValues: each operator's release values reach its
// Install less the keys gpufleet sets, which are checked first: a
// driver.version the nodes do not run is an upgrade not finished (once,
// however many records say so), a MIG strategy or the Network Operator's
// NFD that render sets otherwise is a warning; a release whose values
// cannot be read is refused with what to grant or how to give them by
// hand, and values given by hand stand in for the record.
func TestJudgeReleaseValues(t *testing.T) {
	values := func(t *testing.T, v map[string]any) map[string]any { return asNumbers(t, v) }
	withRecords := func(c Cluster, recs ...HelmRelease) Cluster {
		c.Releases = recs
		return c
	}
	type result struct {
		gpu, net         map[string]any
		gpuFrom, netFrom string
		dropped          []string
		// problems and warnings, in order, each as "reason: words" its
		// message holds
		problems, warnings [][]string
	}
	tests := []struct {
		name  string
		c     func(t *testing.T) Cluster
		given map[string]map[string]any
		want  result
	}{
		{
			name: "the team's values carried, the keys gpufleet sets left out",
			c: func(t *testing.T) Cluster {
				return withRecords(withNetwork(cluster("prod-a", gpuNode("h-1", h100, drv570))),
					recordOf("gpu-operator", release0, values(t, teamValues())),
					recordOf("nvidia-network-operator", "network-operator", values(t, map[string]any{"nfd": map[string]any{"enabled": false, "deployNodeFeatureRules": false}, "sriovNetworkOperator": map[string]any{"enabled": true}})))
			},
			want: result{
				gpu: values(t, map[string]any{
					"driver":       map[string]any{"repository": "registry.example.com/nvidia", "rdma": map[string]any{"enabled": true}},
					"toolkit":      map[string]any{"enabled": false},
					"dcgmExporter": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "15s"}},
					"node-feature-discovery": map[string]any{
						"worker": map[string]any{"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}},
					},
					"operator": map[string]any{"replicas": 2},
				}),
				gpuFrom: secretRecord("gpu-operator", release0),
				dropped: []string{"driver.version"},
				net:     map[string]any{"nfd": map[string]any{"deployNodeFeatureRules": false}, "sriovNetworkOperator": map[string]any{"enabled": true}},
				netFrom: secretRecord("nvidia-network-operator", "network-operator"),
			},
		},
		{
			name: "only keys gpufleet sets: no values, the tables they emptied gone",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)), recordOf("gpu-operator", release0, values(t, map[string]any{
					"driver": map[string]any{"version": drv570, "upgradePolicy": map[string]any{"autoUpgrade": true}, "nvidiaDriverCRD": map[string]any{"enabled": false}},
				})))
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"driver.nvidiaDriverCRD", "driver.upgradePolicy", "driver.version"}},
		},
		{
			name: "a driver.version the nodes do not run, the ClusterPolicy agreeing with the nodes",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570), gpuNode("h-2", h100, drv570)),
					recordOf("gpu-operator", release0, values(t, map[string]any{"driver": map[string]any{"version": drv580}})))
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"driver.version"}, problems: [][]string{{
				"DriverNotRolledOut: Helm release gpu-operator's values ask for driver 580.95.05 (driver.version), but nodes h-1, h-2 run 570.172.08 (and ClusterPolicy cluster-policy asks for 570.172.08)",
				"DriverNotRolledOut: --set driver.version=570.172.08",
			}}},
		},
		{
			name: "a driver.version the ClusterPolicy asks for too: said once, by the ClusterPolicy's check",
			c: func(t *testing.T) Cluster {
				c := withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)),
					recordOf("gpu-operator", release0, values(t, map[string]any{"driver": map[string]any{"version": drv580}})))
				c.ClusterPolicies[0].DriverVersion = drv580
				return c
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"driver.version"}, problems: [][]string{{
				"DriverNotRolledOut: ClusterPolicy cluster-policy asks for driver 580.95.05, but node h-1 runs 570.172.08",
			}}},
		},
		{
			name: "NVIDIADriver mode: the chart's driver.version drives no driver, and is left out",
			c: func(t *testing.T) Cluster {
				c := withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)),
					recordOf("gpu-operator", release0, values(t, map[string]any{"driver": map[string]any{"version": drv580}})))
				c.ClusterPolicies[0].UseNVIDIADriverCRD = true
				return c
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"driver.version"}},
		},
		{
			name: "a MIG strategy and an NFD that render sets otherwise: warnings",
			c: func(t *testing.T) Cluster {
				return withRecords(withNetwork(cluster("prod-a", gpuNode("a-1", a100, drv570).mig("all-1g.10gb"))),
					recordOf("gpu-operator", release0, values(t, map[string]any{"mig": map[string]any{"strategy": "single"}})),
					recordOf("nvidia-network-operator", "network-operator", values(t, map[string]any{"nfd": map[string]any{"enabled": true}})))
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"mig.strategy"}, netFrom: secretRecord("nvidia-network-operator", "network-operator"),
				warnings: [][]string{
					{"OwnedValueReplaced: Helm release gpu-operator sets mig.strategy=single; render installs it with mixed (a pool of the cluster uses MIG"},
					{"OwnedValueReplaced: Helm release network-operator sets nfd.enabled=true; render turns the Network Operator's Node Feature Discovery off"},
				}},
		},
		{
			name: "the MIG strategy render would set anyway: no warning",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("a-1", a100, drv570).mig("all-1g.10gb")),
					recordOf("gpu-operator", release0, values(t, map[string]any{"mig": map[string]any{"strategy": "mixed"}})))
			},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), dropped: []string{"mig.strategy"}},
		},
		{
			name: "Secrets init may not list: what to grant, or how to give the values by hand",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)),
					HelmRelease{Namespace: "gpu-operator", Name: release0, Forbidden: true, Err: "init may not list the Secrets of namespace gpu-operator: forbidden"})
			},
			want: result{problems: [][]string{{
				"ReleaseValuesUnreadable: cannot read the values of Helm release gpu-operator (the gpu-operator chart, namespace gpu-operator): init may not list the Secrets of namespace gpu-operator: forbidden",
				"ReleaseValuesUnreadable: kubectl --context prod-a -n gpu-operator create role gpufleet-init-helm --verb=list --resource=secrets",
				"ReleaseValuesUnreadable: helm --kube-context prod-a get values gpu-operator -n gpu-operator -o yaml > prod-a.gpu-operator.yaml; gpufleet init --values prod-a/gpu-operator=prod-a.gpu-operator.yaml",
			}}},
		},
		{
			name: "no record of the release",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)),
					HelmRelease{Namespace: "gpu-operator", Name: release0, Err: "no Secret or ConfigMap in namespace gpu-operator records a deployed revision of it"})
			},
			want: result{problems: [][]string{{
				"ReleaseValuesUnreadable: records a deployed revision of it. Without them render would install the release with gpufleet's values alone",
				"ReleaseValuesUnreadable: If Helm keeps the release elsewhere (its SQL storage), or it was not installed by Helm, pass them by hand",
			}}},
		},
		{
			name: "values given by hand stand in for a record init may not read",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)),
					HelmRelease{Namespace: "gpu-operator", Name: release0, Forbidden: true, Err: "forbidden"})
			},
			given: map[string]map[string]any{"prod-a/gpu-operator": {"toolkit": map[string]any{"enabled": false}, "driver": map[string]any{"version": drv570}}},
			want:  result{gpu: map[string]any{"toolkit": map[string]any{"enabled": false}}, gpuFrom: ValuesFromFlag, dropped: []string{"driver.version"}},
		},
		{
			name: "values given for an operator the cluster does not run",
			c: func(t *testing.T) Cluster {
				return withRecords(cluster("prod-a", gpuNode("h-1", h100, drv570)), recordOf("gpu-operator", release0, nil))
			},
			given: map[string]map[string]any{"prod-a/network-operator": {"x": 1}},
			want: result{gpuFrom: secretRecord("gpu-operator", release0), problems: [][]string{{
				"ReleaseValuesUnreadable: values given for the network-operator (--values prod-a/network-operator), which this cluster does not run",
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Judge([]Cluster{tt.c(t)}, Options{Values: tt.given})
			fc := r.Fleet.Clusters[0]
			got := result{gpu: fc.GPUOperator.Values, gpuFrom: fc.GPUOperator.ValuesFrom, dropped: fc.GPUOperator.ValuesDropped}
			if fc.NetworkOperator != nil {
				got.net, got.netFrom = fc.NetworkOperator.Values, fc.NetworkOperator.ValuesFrom
			}
			// says is each of ps as want has it where it says all of it,
			// else as it is.
			says := func(ps Problems, want [][]string) [][]string {
				var out [][]string
				for i, p := range ps {
					if i < len(want) && !slices.ContainsFunc(want[i], func(w string) bool {
						reason, words, _ := strings.Cut(w, ": ")
						return string(p.Reason) != reason || !strings.Contains(p.Message, words)
					}) {
						out = append(out, want[i])
						continue
					}
					out = append(out, []string{string(p.Reason) + ": " + p.Message})
				}
				return out
			}
			got.problems = says(r.Problems, tt.want.problems)
			got.warnings = says(r.Warnings, tt.want.warnings)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("(-want +got):\n%s\nproblems: %v\nwarnings: %v", diff, r.Problems, r.Warnings)
			}
		})
	}
}

// TestSplitOwned: the keys gpufleet owns are taken whole (a table above
// one written as something else is taken too, as render writes a table
// there), the tables that emptied are dropped, a table the release wrote
// empty stays, and the release's values are not changed.
func TestSplitOwned(t *testing.T) {
	in := map[string]any{
		"driver":    map[string]any{"version": "570", "repository": "r", "upgradePolicy": map[string]any{"autoUpgrade": true}},
		"mig":       nil,
		"toolkit":   map[string]any{},
		"validator": map[string]any{"plugin": map[string]any{"env": []any{}}},
	}
	before := copyValues(in)
	rest, taken := splitOwned(in, []fleet.OwnedValue{{Path: "driver.version"}, {Path: "driver.upgradePolicy"}, {Path: "mig.strategy"}, {Path: "nfd.enabled"}})
	wantRest := map[string]any{"driver": map[string]any{"repository": "r"}, "toolkit": map[string]any{}, "validator": map[string]any{"plugin": map[string]any{"env": []any{}}}}
	wantTaken := map[string]any{"driver.version": "570", "driver.upgradePolicy": map[string]any{"autoUpgrade": true}, "mig": nil}
	if diff := cmp.Diff(wantRest, rest); diff != "" {
		t.Errorf("rest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantTaken, taken); diff != "" {
		t.Errorf("taken (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("the release's values changed (-before +after):\n%s", diff)
	}
}
