package charts

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

func exampleFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReleaseSpecs: one spec per release in the fleet file's order, each
// with its charts at its versions and only the NVIDIA and Mellanox objects
// render writes for clusters on it, among them each pool's NVIDIADriver of
// the release's driver, named by the file they are written to.
func TestReleaseSpecs(t *testing.T) {
	f := exampleFleet(t)
	specs := releaseSpecs(t, f)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, f.ReleaseNames()) {
		t.Fatalf("specs for %v, want %v", names, f.ReleaseNames())
	}
	for _, s := range specs {
		rel := f.Releases[s.Name]
		if len(s.Charts) == 0 || s.Charts[0].Name != "gpu-operator" || s.Charts[0].Version != rel.GPUOperator || s.Charts[0].Values == nil {
			t.Errorf("%s: charts %+v, want gpu-operator %s with gpufleet's values first", s.Name, s.Charts, rel.GPUOperator)
		}
		want := "nvidiadriver-h100-" + strings.ReplaceAll(rel.Driver, ".", "-") + ".yaml"
		found := false
		for _, o := range s.Objects {
			if g := o.Object.GroupVersionKind().Group; g != "nvidia.com" && g != "mellanox.com" {
				t.Errorf("%s: object of group %q from %s is not checked against the charts' CRDs", s.Name, g, o.Origin)
			}
			found = found || o.Object.GetKind() == "NVIDIADriver" && strings.Contains(o.Origin, want)
		}
		if !found {
			t.Errorf("%s: no NVIDIADriver from a file %s among %d objects", s.Name, want, len(s.Objects))
		}
	}
}

// TestFleetCheckCouldNotCheck: charts the source lacks are failures in the
// report (validate's exit 3), not an error of the run.
func TestFleetCheckCouldNotCheck(t *testing.T) {
	f := exampleFleet(t)
	src, err := NewSource(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := FleetCheck{Fleet: f, Source: src, KubeVersion: DefaultKubeVersion}.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0].Error, "chart not found") {
		t.Errorf("failures %+v, want chart not found", rep.Failures)
	}
}

// TestFleetCheckClusterPolicyMode: `gpufleet validate` renders the GPU
// Operator chart with the values of a cluster whose driver stays with the
// ClusterPolicy (driver.nvidiaDriverCRD.enabled false, driver.version the
// release's driver, driver.usePrecompiled for a precompiled branch, the
// gpu-operator actuator's upgrade policy both at rest and while the driver
// moves) and checks them, at every GPU Operator version of
// ../shared/operators (v24.6.2 … v26.7.0), full driver versions and
// precompiled branches alike, beside a release without a Network Operator.
func TestFleetCheckClusterPolicyMode(t *testing.T) {
	ops := operatorsDir(t)
	var releases strings.Builder
	for i, g := range gpuOperatorVersions {
		name := strings.ReplaceAll(strings.TrimPrefix(g, "v"), ".", "-")
		fmt.Fprintf(&releases, "[releases.r%s]\ngpu-operator = %q\nnetwork-operator = %q\ndriver = \"580.95.05\"\n\n", name, g, networkOperatorVersions[i%len(networkOperatorVersions)])
		fmt.Fprintf(&releases, "[releases.p%s]\ngpu-operator = %q\ndriver = \"570\"\nprecompiled = true\n\n", name, g)
	}
	f, err := fleet.Parse("fleet.toml", []byte(releases.String()+`
[clusters.cp]
environment = "staging"

[clusters.cp.gpu-operator]
release = "gpu-operator-1712345678"
namespace = "nvidia-gpu-operator"
driver-management = "clusterpolicy"

[[clusters.cp.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4

[[waves]]
name = "staging"
clusters = ["cp"]

[policy]
actuator = "gpu-operator"

[promotion]
stable = "r24-6-2"
`))
	if err != nil {
		t.Fatal(err)
	}
	rep := checkClean(t, f, ops)
	// The ClusterPolicy-mode values are among those validate rendered, at
	// rest and moving, for every release.
	specs := releaseSpecs(t, f)
	for _, s := range specs {
		rel := f.Releases[s.Name]
		autoUpgrade := map[any]bool{}
		for _, c := range s.Charts {
			driver, _ := c.Values["driver"].(map[string]any)
			crd, _ := driver["nvidiaDriverCRD"].(map[string]any)
			if c.Name != "gpu-operator" || crd["enabled"] != false {
				continue
			}
			if driver["version"] != rel.Driver || (driver["usePrecompiled"] == true) != rel.Precompiled {
				t.Errorf("%s: ClusterPolicy-mode driver values %v, want version %s precompiled %t", s.Name, driver, rel.Driver, rel.Precompiled)
			}
			autoUpgrade[driver["upgradePolicy"].(map[string]any)["autoUpgrade"]] = true
		}
		if !autoUpgrade[true] || !autoUpgrade[false] {
			t.Errorf("%s: ClusterPolicy-mode value sets with autoUpgrade %v, want both at rest (false) and moving (true)", s.Name, autoUpgrade)
		}
		if (rel.NetworkOperator == "") != !slices.ContainsFunc(s.Charts, func(c ChartSpec) bool { return c.Name == "network-operator" }) {
			t.Errorf("%s: network-operator %q, charts %v", s.Name, rel.NetworkOperator, s.Charts)
		}
	}
	t.Logf("%d custom resources checked in %d releases", rep.Objects, len(specs))
}

// networkFleet is a fleet with one release per GPU Operator version of
// ../shared/operators, each paired with a Network Operator version (every
// one of those too) and the OFED driver that version ships, on a cluster
// whose pool has managed NICs and GPUDirect RDMA.
func networkFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	ofed := map[string]string{"v25.4.0": "25.04-0.6.1.0-2", "v25.10.0": "doca3.2.0-25.10-1.2.8.0-2", "v26.4.1": "doca3.4.1-26.04-1.1.0.0-1"}
	var releases strings.Builder
	for i, g := range gpuOperatorVersions {
		n := networkOperatorVersions[i%len(networkOperatorVersions)]
		name := strings.ReplaceAll(strings.TrimPrefix(g, "v"), ".", "-")
		fmt.Fprintf(&releases, "[releases.r%s]\ngpu-operator = %q\nnetwork-operator = %q\nofed-driver = %q\ndriver = \"580.95.05\"\n\n", name, g, n, ofed[n])
	}
	f, err := fleet.Parse("fleet.toml", []byte(releases.String()+`
[clusters.ib]
environment = "staging"

[[clusters.ib.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4
managed-nics = true
gpudirect-rdma = true

[[waves]]
name = "staging"
clusters = ["ib"]

[promotion]
stable = "r24-6-2"
`))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFleetCheckNicClusterPolicy: `gpufleet validate` checks the
// NicClusterPolicy render writes against the CRD of each release's Network
// Operator version (v25.4.0, v25.10.0, v26.4.1), and the GPU Operator chart
// with driver.rdma at every GPU Operator version: nothing to report.
func TestFleetCheckNicClusterPolicy(t *testing.T) {
	ops := operatorsDir(t)
	f := networkFleet(t)
	specs := releaseSpecs(t, f)
	seen := map[string]bool{}
	for _, s := range specs {
		n := 0
		for _, o := range s.Objects {
			if o.Object.GetKind() == "NicClusterPolicy" {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no NicClusterPolicy among the objects validate checks", s.Name)
		}
		seen[f.Releases[s.Name].NetworkOperator] = true
		for _, c := range s.Charts {
			if c.Name != "gpu-operator" || c.Clusters == nil {
				continue
			}
			if rdma := c.Values["driver"].(map[string]any)["rdma"]; rdma == nil {
				t.Errorf("%s: GPU Operator values for %v without driver.rdma", s.Name, c.Clusters)
			}
		}
	}
	for _, n := range networkOperatorVersions {
		if !seen[n] {
			t.Errorf("no release on Network Operator %s", n)
		}
	}
	checkClean(t, f, ops)
}

// checkClean runs validate's check of f against the charts in ops, fails
// t on every finding and every check it could not make, and returns the
// report.
func checkClean(t *testing.T, f *fleet.Fleet, ops string) *Report {
	t.Helper()
	rep, err := FleetCheck{Fleet: f, Source: &FolderSource{Dir: ops}, KubeVersion: DefaultKubeVersion}.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range rep.Findings {
		t.Errorf("%s %s %s %s: %s (%s)", fd.Release, fd.Chart, fd.Version, fd.Object(), fd.Message(), fd.Origin)
	}
	for _, fl := range rep.Failures {
		t.Errorf("could not check %s %s %s: %s", fl.Release, fl.Chart, fl.Version, fl.Error)
	}
	return rep
}

// TestFleetCheckMisspeltNicClusterPolicyField: a misspelt field of the
// NicClusterPolicy is an unknown field, reported against the Network
// Operator version whose CRD refused it; at v25.x the field it stands
// for, which those CRDs require, is missing too.
func TestFleetCheckMisspeltNicClusterPolicyField(t *testing.T) {
	ops := operatorsDir(t)
	f := networkFleet(t)
	files, err := render.EveryRelease(f, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, rf := range files {
		if strings.HasSuffix(rf.Path, "/nicclusterpolicy.yaml") {
			files[i].Data = []byte(strings.Replace(string(rf.Data), "    version: ", "    verison: ", 1)) //nolint:misspell // deliberately misspelled input
		}
	}
	specs, err := ReleaseSpecs(f, files)
	if err != nil {
		t.Fatal(err)
	}
	rep := (&Checker{Source: &FolderSource{Dir: ops}, KubeVersion: DefaultKubeVersion}).Check(t.Context(), specs)
	var got []string
	for _, fd := range rep.Findings {
		got = append(got, fd.Release+" "+fd.Chart+" "+fd.Version+" "+fd.Object()+": "+fd.Message())
	}
	for _, fl := range rep.Failures {
		t.Errorf("could not check %s %s %s: %s", fl.Release, fl.Chart, fl.Version, fl.Error)
	}
	want := []string{}
	for i, g := range gpuOperatorVersions {
		n := networkOperatorVersions[i%len(networkOperatorVersions)]
		name := "r" + strings.ReplaceAll(strings.TrimPrefix(g, "v"), ".", "-")
		if n != "v26.4.1" {
			want = append(want, name+" network-operator "+n+" NicClusterPolicy/nic-cluster-policy: spec.ofedDriver.version: Required value")
		}
		want = append(want, name+" network-operator "+n+" NicClusterPolicy/nic-cluster-policy: spec.ofedDriver.verison: unknown field") //nolint:misspell // deliberately misspelled input
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// releaseSpecs are the release specs of f's rendered files, as validate
// reads them.
func releaseSpecs(t *testing.T, f *fleet.Fleet) []ReleaseSpec {
	t.Helper()
	files, err := render.EveryRelease(f, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ReleaseSpecs(f, files)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}
