package render

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestAutoUpgradeOnlyWhileTheDriverMoves: on the gpu-operator actuator the
// operator's automatic upgrade is on only while the cluster's DriverRollout
// moves the driver (target differs from previous, or aborted), in both
// driver management modes, wherever the upgrade policy is written: the
// chart's driver.upgradePolicy (the ClusterPolicy) and, from v26.7.0, the
// NVIDIADriver's spec.upgradePolicy. On adoption the first apply must
// change nothing that runs, and nothing holds the nodes before the
// lifecycle step has applied a DriverRollout. The gpufleet actuator keeps
// it off throughout.
func TestAutoUpgradeOnlyWhileTheDriverMoves(t *testing.T) {
	promotions := []struct {
		name      string
		promotion string
		moving    bool
	}{
		{"at rest", `stable = "r1"`, false},
		{"rollout reached it", "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"prod\" }", true},
		{"rollout of the same driver", "stable = \"r1\"\nrollout = { release = \"r3\", wave = \"prod\" }", false},
		{"rollout not there yet", "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }", false},
		{"aborted", "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"prod\", aborted = true }", true},
		{"promoted to stable", `stable = "r2"`, false},
	}
	for _, mode := range []string{fleet.DriverManagementNVIDIADriver, fleet.DriverManagementClusterPolicy} {
		for _, actuator := range []string{"gpu-operator", "gpufleet"} {
			if mode == fleet.DriverManagementClusterPolicy && actuator == "gpufleet" {
				continue // refused by the fleet file
			}
			for _, pr := range promotions {
				t.Run(mode+"/"+actuator+"/"+pr.name, func(t *testing.T) {
					f, err := fleet.Parse("fleet.toml", []byte(strings.NewReplacer(
						"MODE", mode, "ACTUATOR", actuator, "PROMOTION", pr.promotion,
					).Replace(autoUpgradeFleet)))
					if err != nil {
						t.Fatal(err)
					}
					out, err := Render(f)
					if err != nil {
						t.Fatal(err)
					}
					want := pr.moving && actuator == "gpu-operator"
					v := helmValues(t, helmRelease(t, out, "clusters/a/operators/helmrelease-gpu-operator.yaml"))
					if got := dig(v, "driver", "upgradePolicy", "autoUpgrade"); got != want {
						t.Errorf("chart driver.upgradePolicy.autoUpgrade %v, want %t", got, want)
					}
					if actuator == "gpufleet" {
						if up, _ := dig(v, "driver", "upgradePolicy").(map[string]any); len(up) != 1 {
							t.Errorf("the gpufleet actuator writes autoUpgrade alone: %v", up)
						}
					}
					if mode == fleet.DriverManagementClusterPolicy {
						if cfg := configFiles(out, "a"); len(cfg) != 2 {
							t.Errorf("ClusterPolicy mode writes no NVIDIADriver: %v", cfg)
						}
						return
					}
					drivers := 0
					for _, p := range configFiles(out, "a") {
						if !strings.Contains(p, "/nvidiadriver-") {
							continue
						}
						drivers++
						objs, err := crdcheck.DecodeObjects(out.Files[p])
						if err != nil || len(objs) != 1 {
							t.Fatalf("%s: %v", p, err)
						}
						if got := dig(objs[0].Object, "spec", "upgradePolicy", "autoUpgrade"); got != want {
							t.Errorf("%s spec.upgradePolicy.autoUpgrade %v, want %t (the same rule as the chart's)", p, got, want)
						}
					}
					if drivers == 0 {
						t.Error("no NVIDIADriver")
					}
				})
			}
		}
	}
}

// autoUpgradeFleet is one cluster on GPU Operator v26.7.0 (whose
// NVIDIADriver has an upgrade policy) with driver management MODE and
// actuator ACTUATOR; r3 has r1's driver.
const autoUpgradeFleet = `
[releases.r1]
gpu-operator = "v26.7.0"
driver = "570.172.08"

[releases.r2]
gpu-operator = "v26.7.0"
driver = "580.95.05"

[releases.r3]
gpu-operator = "v26.7.0"
network-operator = "v26.4.1"
driver = "570.172.08"

[clusters.a]
environment = "prod"

[clusters.a.gpu-operator]
driver-management = "MODE"

[[clusters.a.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4

[clusters.b]
environment = "staging"

[[clusters.b.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4

[[waves]]
name = "staging"
clusters = ["b"]

[[waves]]
name = "prod"
clusters = ["a"]

[policy]
actuator = "ACTUATOR"

[promotion]
PROMOTION
`
