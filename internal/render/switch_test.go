package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// switchFleet is one cluster, a, with the GPU Operator at version op and
// driver management mode, in chart mode chartMode.
func switchFleet(t *testing.T, chartMode, op, mode string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Parse("fleet.toml", []byte(strings.NewReplacer("CHARTMODE", chartMode, "OPERATOR", op, "MODE", mode).Replace(`
[charts]
mode = "CHARTMODE"

[releases.r]
gpu-operator = "OPERATOR"
driver = "570.172.08"

[clusters.a]
environment = "staging"

[clusters.a.gpu-operator]
release = "gpu-operator-1712345678"
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
clusters = ["a", "b"]

[policy]
actuator = "gpu-operator"

[promotion]
stable = "r"
`)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func renderSwitch(t *testing.T, f *fleet.Fleet) *Output {
	t.Helper()
	out, err := RenderWith(f, Options{Charts: goldenCharts{}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSwitchToNVIDIADriverRefused: a render that switches a cluster's GPU
// Operator from ClusterPolicy to NVIDIADriver driver management, judged
// against the tree already in the output folder, is refused before anything
// is written when the operator is below v26.7.0 on either side or changes
// version in the same render (the operator would delete
// nvidia-driver-daemonset with every driver pod at once, or the migration
// would be combined with the upgrade NVIDIA says to keep apart), and on
// v26.7.0 or later too, whose own node-by-node migration gpufleet does not
// drive yet. The switch back is refused on every version. The previous mode is read from what
// render wrote: the HelmRelease's values, or the rendered ClusterPolicy.
func TestSwitchToNVIDIADriverRefused(t *testing.T) {
	cp, nd := fleet.DriverManagementClusterPolicy, fleet.DriverManagementNVIDIADriver
	hr, mf := fleet.ModeHelmRelease, fleet.ModeManifests
	tests := []struct {
		name               string
		oldChart, oldOp    string
		oldMode            string
		newChart, newOp    string
		newMode            string
		refused            bool
		from, to, sentence string
	}{
		{"below v26.7.0", hr, "v25.3.4", cp, hr, "v25.3.4", nd, true, "v25.3.4", "v25.3.4", "gpu-operator v25.3.4 deletes nvidia-driver-daemonset, and with it every driver pod of the cluster at once"},
		{"v26.7.0 on both sides: the operator's migration is not driven by gpufleet yet", hr, "v26.7.0", cp, hr, "v26.7.0", nd, true, "v26.7.0", "v26.7.0", "does not hold and release that migration under the cluster's policy yet"},
		{"upgraded to v26.7.0 and switched in one render", hr, "v25.10.1", cp, hr, "v26.7.0", nd, true, "v25.10.1", "v26.7.0", "gpu-operator v25.10.1 deletes nvidia-driver-daemonset"},
		{"downgraded below v26.7.0 and switched", hr, "v26.7.0", cp, hr, "v25.10.1", nd, true, "v26.7.0", "v25.10.1", "gpu-operator v25.10.1 deletes nvidia-driver-daemonset"},
		{"upgraded from v26.7.0 and switched in one render", hr, "v26.7.0", cp, hr, "v26.9.0", nd, true, "v26.7.0", "v26.9.0", "needs v26.7.0 or later already running in ClusterPolicy mode"},
		{"manifests mode, read from the ClusterPolicy", mf, "v25.3.4", cp, mf, "v25.3.4", nd, true, "v25.3.4", "v25.3.4", "every driver pod"},
		{"manifests mode, v26.7.0 on both sides", mf, "v26.7.0", cp, mf, "v26.7.0", nd, true, "v26.7.0", "v26.7.0", "node by node"},
		{"chart mode changed too", hr, "v25.3.4", cp, mf, "v25.3.4", nd, true, "v25.3.4", "v25.3.4", "every driver pod"},
		{"back to ClusterPolicy", hr, "v25.3.4", nd, hr, "v25.3.4", cp, true, "v25.3.4", "v25.3.4", "no GPU Operator version moves nodes that way one at a time"},
		{"back to ClusterPolicy on v26.7.0 too", mf, "v26.7.0", nd, mf, "v26.7.0", cp, true, "v26.7.0", "v26.7.0", "nvidia-driver-daemonset would start on every node at once"},
		{"ClusterPolicy kept while upgrading", hr, "v25.3.4", cp, hr, "v26.7.0", cp, false, "", "", ""},
		{"NVIDIADriver kept", hr, "v25.3.4", nd, hr, "v25.10.1", nd, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Write(renderSwitch(t, switchFleet(t, tt.oldChart, tt.oldOp, tt.oldMode)), dir); err != nil {
				t.Fatal(err)
			}
			before := readTree(t, dir)
			out := renderSwitch(t, switchFleet(t, tt.newChart, tt.newOp, tt.newMode))
			_, diffErr := Diff(out, dir)
			changes, err := Write(out, dir)
			if !tt.refused {
				if err != nil || diffErr != nil {
					t.Fatalf("refused: %v / %v", err, diffErr)
				}
				if len(changes) == 0 {
					t.Error("nothing written")
				}
				return
			}
			var se *SwitchError
			if !errors.As(err, &se) {
				t.Fatalf("Write: %v, want a SwitchError", err)
			}
			if !errors.As(diffErr, new(*SwitchError)) {
				t.Errorf("Diff (render --check): %v, want the same refusal", diffErr)
			}
			if se.Cluster != "a" || se.From != tt.from || se.To != tt.to {
				t.Errorf("refusal %+v, want cluster a, %s to %s", *se, tt.from, tt.to)
			}
			wants := []string{
				"cluster a: refusing to switch the GPU Operator from ClusterPolicy to NVIDIADriver driver management (gpu-operator " + tt.from + " in the output folder, " + tt.to + " in this render)",
				tt.sentence,
				`Keep driver-management = "clusterpolicy" in [clusters.a.gpu-operator]: the gpu-operator actuator moves its nodes one at a time under the policy`,
			}
			if tt.newMode == cp {
				wants = []string{
					"cluster a: refusing to switch the GPU Operator from NVIDIADriver to ClusterPolicy driver management (gpu-operator " + tt.from + " in the output folder, " + tt.to + " in this render)",
					tt.sentence,
					`Keep driver-management = "nvidiadriver" in [clusters.a.gpu-operator]`,
				}
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q:\n%s", want, err)
				}
			}
			if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
				t.Errorf("a refused render changed the output folder (-before +after):\n%s", diff)
			}
			// A command undoing its own write goes back whatever the guard
			// would say.
			if _, err := WriteWith(out, dir, WriteOptions{Restore: true}); err != nil {
				t.Errorf("Restore: %v", err)
			}
		})
	}
}

// TestSwitchGuardFirstRender: with nothing of a cluster in the output
// folder there is nothing to switch from: render writes, and
// NewUnadoptedClusters names the clusters that get NVIDIADriver management
// on a GPU Operator below v26.7.0 without an adopted install (b here, not
// a, whose table says how it runs), until they have been rendered once.
func TestSwitchGuardFirstRender(t *testing.T) {
	dir := t.TempDir()
	f := switchFleet(t, fleet.ModeHelmRelease, "v25.3.4", fleet.DriverManagementNVIDIADriver)
	names, err := NewUnadoptedClusters(f, dir)
	if err != nil || !cmp.Equal(names, []string{"b"}) {
		t.Errorf("NewUnadoptedClusters before the first render: %v %v, want [b]", names, err)
	}
	if _, err := Write(renderSwitch(t, f), dir); err != nil {
		t.Fatal(err)
	}
	if names, err := NewUnadoptedClusters(f, dir); err != nil || len(names) != 0 {
		t.Errorf("NewUnadoptedClusters after it: %v %v", names, err)
	}
	if names, err := NewUnadoptedClusters(switchFleet(t, fleet.ModeHelmRelease, "v26.7.0", fleet.DriverManagementNVIDIADriver), t.TempDir()); err != nil || len(names) != 0 {
		t.Errorf("NewUnadoptedClusters on v26.7.0: %v %v, want none (its switch keeps the driver pods)", names, err)
	}
}

// TestSwitchGuardAllClustersAtOnce: every refused cluster is named, and a
// cluster switching safely beside them does not hide them.
func TestSwitchGuardAllClustersAtOnce(t *testing.T) {
	src := func(mode string) string {
		return strings.ReplaceAll(`
[releases.r]
gpu-operator = "v25.3.4"
driver = "570.172.08"
[clusters.x]
environment = "staging"
gpu-operator = { driver-management = "MODE" }
[[clusters.x.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2
[clusters.y]
environment = "staging"
gpu-operator = { driver-management = "MODE" }
[[clusters.y.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2
[[waves]]
name = "staging"
clusters = ["x", "y"]
[policy]
actuator = "gpu-operator"
[promotion]
stable = "r"
`, "MODE", mode)
	}
	dir := t.TempDir()
	for i, mode := range []string{fleet.DriverManagementClusterPolicy, fleet.DriverManagementNVIDIADriver} {
		f, err := fleet.Parse("fleet.toml", []byte(src(mode)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Write(renderSwitch(t, f), dir)
		if i == 0 {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "cluster x: refusing") || !strings.Contains(err.Error(), "cluster y: refusing") {
			t.Errorf("want both clusters refused, got %v", err)
		}
	}
}
