package adopt

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

var update = flag.Bool("update", false, "rewrite the golden fleet files in testdata/")

// goldenFleets are the fleets the golden files hold, each as Judge builds
// it from clusters as the GPU Operator and GPU Feature Discovery label
// them.
func goldenFleets() map[string]struct {
	clusters []Cluster
	opts     Options
} {
	type golden = struct {
		clusters []Cluster
		opts     Options
	}
	return map[string]golden{
		// The common case: the chart's default mode (ClusterPolicy), a
		// staging and two production clusters, MIG beside whole GPUs, the
		// Network Operator, names and waves by default.
		"clusterpolicy": {clusters: []Cluster{
			withNetwork(cluster("stg-h100", nodes("stg-h100", h100, drv570, 2)...)),
			withNetwork(cluster("prod-h100-a", nodes("prod-h100-a", h100, drv570, 4)...)),
			withNetwork(func() Cluster {
				c := cluster("prod-a100",
					gpuNode("a100-1", a100, drv570), gpuNode("a100-2", a100, drv570),
					gpuNode("a100-mig-1", a100, drv570).mig("all-1g.10gb"), gpuNode("a100-mig-2", a100+"-MIG-1g.10gb", drv570).mig("all-1g.10gb"))
				c.Deployments[0] = gpuOperatorDeployment("gpu-operator", "gpu-operator-1712345678", gpuOp)
				// The team's own values, as Helm recorded them; the
				// Network Operator's too (added by withNetwork below).
				c.Releases = []HelmRelease{
					recordOf("gpu-operator", "gpu-operator-1712345678", teamValues()),
					recordOf("nvidia-network-operator", "network-operator", map[string]any{"nfd": map[string]any{"enabled": false}, "ofedDriver": map[string]any{"deploy": true}}),
				}
				return c
			}()),
		}},
		// NVIDIADriver mode, a pool named by its label, a pool whose GPUs
		// DRA hands out (its driver read from the slices alone), the
		// operators in
		// namespaces of their own, no Network Operator, the release, the
		// environments, the waves and the charts from flags.
		"nvidiadriver": {clusters: []Cluster{
			func() Cluster {
				c := cluster("eu-1", gpuNode("n-1", h100, drv580).pool("training"), gpuNode("n-2", h100, drv580).pool("training"), gpuNode("l-1", "NVIDIA-L40S", drv580).without(v1alpha1.LabelGFDDriverFull).without(v1alpha1.LabelGFDDriverMajor).byDRA([]string{"NVIDIA L40S"}, "580.95.5"))
				c.Deployments[0] = gpuOperatorDeployment("nvidia-system", "nvidia", "v25.10.1")
				c.ClusterPolicies = []ClusterPolicy{{Name: "cluster-policy", UseNVIDIADriverCRD: true, State: "ready"}}
				// Values as Helm keeps them after an upgrade by
				// gpufleet: its own keys among the team's.
				c.Releases = []HelmRelease{{Namespace: "nvidia-system", Name: "nvidia", Record: "ConfigMap nvidia-system/sh.helm.release.v1.nvidia.v7", Revision: 7, Values: map[string]any{
					"driver":    map[string]any{"enabled": true, "nvidiaDriverCRD": map[string]any{"enabled": true, "deployDefaultCR": false}, "upgradePolicy": map[string]any{"autoUpgrade": false}, "repository": "registry.internal.example/nvidia"},
					"validator": map[string]any{"plugin": map[string]any{"env": []any{map[string]any{"name": "WITH_WORKLOAD", "value": "false"}}}},
					"cdi":       map[string]any{"enabled": true, "default": false},
				}}}
				return c
			}(),
			func() Cluster {
				c := cluster("us-1", gpuNode("u-1", h200, drv580))
				c.Deployments[0] = gpuOperatorDeployment("gpu-operator", "gpu-operator", "v25.10.1")
				c.ClusterPolicies = []ClusterPolicy{{Name: "cluster-policy", UseNVIDIADriverCRD: true, State: "ready"}}
				return c
			}(),
		}, opts: Options{Release: "r2026-06", Environments: map[string]string{"eu-1": "prod-eu", "us-1": "prod-us"},
			Waves:           []WaveSpec{{Name: "europe", Contexts: []string{"eu-1"}}, {Name: "america", Contexts: []string{"us-1"}}},
			ChartRepository: "oci://registry.internal.example/nvidia", ChartMode: "manifests"}},
		// Precompiled drivers: the release names the branch.
		"precompiled": {clusters: []Cluster{func() Cluster {
			c := cluster("gpu", nodes("gpu", h100, drv570, 3)...)
			c.ClusterPolicies[0].UsePrecompiled, c.ClusterPolicies[0].DriverVersion = true, "570"
			return c
		}()}},
	}
}

func withNetwork(c Cluster) Cluster {
	c.Deployments = append(c.Deployments, networkOperatorDeployment("nvidia-network-operator", "network-operator", netOp))
	return c
}

// TestWriteGolden: the fleet files Write prints equal testdata/<name>.toml
// (go test ./internal/adopt -run TestWriteGolden -update rewrites them),
// are TOML, and come out the same twice.
func TestWriteGolden(t *testing.T) {
	for name, g := range goldenFleets() {
		t.Run(name, func(t *testing.T) {
			r := Judge(recorded(g.clusters), g.opts)
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			got := Write(r.Fleet)
			var doc map[string]any
			if err := toml.Unmarshal(got, &doc); err != nil {
				t.Fatalf("not TOML: %v\n%s", err, got)
			}
			if _, err := fleet.Parse(name+".toml", got); err != nil {
				t.Errorf("the fleet parser refuses it: %v\n%s", err, got)
			}
			if again := Write(Judge(recorded(g.clusters), g.opts).Fleet); string(again) != string(got) {
				t.Error("two writes of one fleet differ")
			}
			golden := filepath.Join("testdata", name+".toml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/adopt -run TestWriteGolden -update writes it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("Write differs from %s:\n%s", golden, got)
			}
		})
	}
}

// TestWriteValuesRoundTrip: whatever a release's values hold, the fleet
// file init writes reads them back as they were (as Helm reads a values
// file: JSON's types): strings YAML would read as something else, a
// release's three single quotes (no literal string then), a control
// character, a key with dots, a number.
func TestWriteValuesRoundTrip(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"plain":                               teamValues(),
		"strings that look like other things": {"a": map[string]any{"yes": "yes", "on": "on", "one": "1.0", "null": "null", "empty": "", "octal": "0755", "date": "2026-01-02"}},
		"three single quotes":                 {"script": "echo '''quoted'''\nexit 0\n"},
		"a control character and a quote":     {"banner": "bell\a \"hi\" \\ tab\tend"},
		"keys with dots and a number":         {"nodeSelector": map[string]any{"nvidia.com/gpu.present": "true"}, "replicas": 3, "ratio": 0.25},
		"ends with a single quote":            {"x": "it's'"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster("prod-a", gpuNode("h-1", h100, drv570))
			c.Releases = []HelmRelease{recordOf("gpu-operator", release0, asNumbers(t, values))}
			r := Judge([]Cluster{c}, Options{})
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			text := Write(r.Fleet)
			f, err := fleet.Parse("fleet.toml", text)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			want := map[string]any{}
			b, _ := json.Marshal(values)
			_ = json.Unmarshal(b, &want)
			want, _ = splitOwned(want, fleet.GPUOperatorOwnedValues)
			if diff := cmp.Diff(want, f.Clusters["prod-a"].GPUOperatorValues()); diff != "" {
				t.Errorf("values read back (-want +got):\n%s\n%s", diff, text)
			}
		})
	}
}
