package gate

import (
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// TestExpectIsWhatRenderWrites is item 4 of issue 21: in every promotion
// state, aborted included, the gate looks for the DriverRollout render
// writes for the cluster (its name and target) and for NVIDIADrivers that
// render writes, one per pool at the driver the nodes end on. A gate that
// derived either its own way would wait for an object that never comes.
func TestExpectIsWhatRenderWrites(t *testing.T) {
	base, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	stable := base.Promotion.Stable
	states := map[string]fleet.Promotion{
		"stable":          {Stable: stable},
		"staging":         {Stable: stable, Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "staging", Stage: fleet.StageAll}},
		"canary cluster":  {Stable: stable, Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "prod-h100", Stage: fleet.StageCanary}},
		"aborted in prod": {Stable: stable, Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "prod-h100", Stage: fleet.StageAll, Aborted: true}},
	}
	for name, p := range states {
		t.Run(name, func(t *testing.T) {
			f := base.WithPromotion(p)
			out, err := render.Render(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range f.ClusterNames() {
				e := Expect(f, c, rev)
				dir := render.ClusterDir(c)
				var dr v1alpha1.DriverRollout
				if err := yaml.Unmarshal(out.Files[path.Join(dir, "lifecycle", "driverrollout.yaml")], &dr); err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				if e.Rollout != dr.Name {
					t.Errorf("%s: the gate expects DriverRollout %q, render writes %q", c, e.Rollout, dr.Name)
				}
				if want := dr.Spec.TargetVersion; !dr.Spec.Abort && e.Release.Driver != want {
					t.Errorf("%s: the gate expects driver %s, render's DriverRollout targets %s", c, e.Release.Driver, want)
				}
				if dr.Spec.Abort && e.Release.Driver != dr.Spec.PreviousVersion {
					t.Errorf("%s: aborted: the gate expects driver %s, render rolls back to %s", c, e.Release.Driver, dr.Spec.PreviousVersion)
				}
				if len(e.NVIDIADrivers) != len(f.Clusters[c].Pools) {
					t.Errorf("%s: %d NVIDIADrivers expected for %d pools", c, len(e.NVIDIADrivers), len(f.Clusters[c].Pools))
				}
				for _, n := range e.NVIDIADrivers {
					if _, ok := out.Files[path.Join(dir, "config", "nvidiadriver-"+n+".yaml")]; !ok {
						t.Errorf("%s: the gate expects NVIDIADriver %s, render writes none", c, n)
					}
				}
			}
		})
	}
}

// TestExpectAdoptedOperators: for a fleet adopted as found (an operator
// under its own release name and namespace, a ClusterPolicy-managed
// driver), the gate expects each HelmRelease where render writes it, at the
// chart render asks for, and no NVIDIADriver where render writes none; in
// the manifests mode each operator's Deployment where the operators step's
// health checks look for it.
func TestExpectAdoptedOperators(t *testing.T) {
	f, err := fleet.Load("../render/testdata/adopted/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.ClusterNames() {
		e := Expect(f, c, rev)
		written := map[string]string{}
		for file, data := range out.Files {
			if path.Dir(file) != path.Join(render.ClusterDir(c), "operators") || !strings.HasPrefix(path.Base(file), "helmrelease-") {
				continue
			}
			var hr struct {
				Metadata struct{ Name, Namespace string }
				Spec     struct {
					Chart struct{ Spec struct{ Version string } }
				}
			}
			if err := yaml.Unmarshal(data, &hr); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			written[hr.Metadata.Namespace+"/"+hr.Metadata.Name] = hr.Spec.Chart.Spec.Version
		}
		if diff := cmp.Diff(written, e.HelmReleases); diff != "" {
			t.Errorf("%s: HelmReleases (-render writes +the gate expects):\n%s", c, diff)
		}
		if got, want := e.GPUOperatorNamespace, f.Clusters[c].GPUOperatorNamespace(); got != want {
			t.Errorf("%s: GPU Operator namespace %q, want %q", c, got, want)
		}
	}
	cp := Expect(f, "cp", rev)
	if cp.DriverManagement != fleet.DriverManagementClusterPolicy || len(cp.NVIDIADrivers) != 0 {
		t.Errorf("cp: driver management %q, NVIDIADrivers %v; want clusterpolicy and none", cp.DriverManagement, cp.NVIDIADrivers)
	}
	f.Charts.Mode = fleet.ModeManifests
	want := map[string]string{
		"gpu-operator/gpu-operator":          "gpu-operator-25.3.4",
		"nvidia-net/net-op-network-operator": "network-operator-25.4.0",
	}
	if diff := cmp.Diff(want, Expect(f, "nd", rev).OperatorDeployments); diff != "" {
		t.Errorf("nd, manifests mode: operator Deployments (-want +got):\n%s", diff)
	}
}
