package gate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// The names of the checks are a wire format: reports, goldens, the e2e
// suite and people's scripts read them. Each constructor writes the name the
// gate always wrote, and ParseCheckID reads it back to the same identity.
func TestCheckNames(t *testing.T) {
	for _, tt := range []struct {
		id   CheckID
		name string
	}{
		{KustomizationCheck("operators"), "flux/Kustomization/operators"},
		{HelmReleaseCheck("gpu-operator/gpu-operator"), "flux/HelmRelease/gpu-operator/gpu-operator"},
		{OperatorDeploymentCheck("nvidia-network-operator/network-operator"), "operators/Deployment/nvidia-network-operator/network-operator"},
		{ClusterPolicyCheck(), "gpu-operator/ClusterPolicy"},
		{DriverManagementCheck(), "gpu-operator/driver-management"},
		{NVIDIADriverCheck("h100-580-95-05"), "gpu-operator/NVIDIADriver/h100-580-95-05"},
		{PoolDriverCheck("h100"), "nodes/h100/driver"},
		{PoolDriverLabelCheck("h100"), "nodes/h100/driver-label"},
		{PoolHeldCheck("h100"), "nodes/h100/held"},
		{PoolReadyCheck("h100"), "nodes/h100/ready"},
		{PoolGPUErrorsCheck("h100"), "nodes/h100/gpu-errors"},
		{QuarantinedCheck(), "nodes/quarantined"},
		{RolloutCheck("r2026-06"), "lifecycle/DriverRollout/r2026-06"},
		{ConnectCheck(), "connect"},
		// A pool may be called like a check's last word.
		{PoolReadyCheck("driver"), "nodes/driver/ready"},
		{PoolDriverCheck("quarantined"), "nodes/quarantined/driver"},
	} {
		if got := tt.id.String(); got != tt.name {
			t.Errorf("%+v: name %q, want %q", tt.id, got, tt.name)
		}
		back, err := ParseCheckID(tt.name)
		if err != nil || back != tt.id {
			t.Errorf("ParseCheckID(%q) = %+v, %v; want %+v", tt.name, back, err, tt.id)
		}
	}
	for _, bad := range []string{"", "flux/Kustomization/", "nodes/a/b/driver", "nodes/h100/bogus", "gpu-operator/ClusterPolicy/x"} {
		if id, err := ParseCheckID(bad); err == nil {
			t.Errorf("ParseCheckID(%q) = %+v, want an error", bad, id)
		}
	}
}

// Every kind is listed once, and every kind but the connection's is one
// Evaluate makes on the example fleet (an unlisted kind would be one no
// reader is tested against).
func TestCheckKindsListed(t *testing.T) {
	kinds := CheckKinds()
	for i, k := range kinds {
		if slices.Index(kinds, k) != i {
			t.Errorf("kind %s listed twice", k)
		}
		if strings.Count(string(k), "*") > 1 {
			t.Errorf("kind %s has more than one object", k)
		}
	}
	e := exampleExpect(t, "stg-h100")
	made := map[CheckKind]bool{}
	for _, c := range Evaluate(e, healthy(e)) {
		made[c.Name.Kind] = true
		if !slices.Contains(kinds, c.Name.Kind) {
			t.Errorf("check %s has a kind CheckKinds does not list", c.Name)
		}
		if back, err := ParseCheckID(c.Name.String()); err != nil || back != c.Name {
			t.Errorf("check %s reads back as %+v, %v", c.Name, back, err)
		}
	}
	for _, e := range []Expected{manifestsExpect(t), adoptedExpect(t, "cp"), argoExpect(t, "argocd")} {
		for _, c := range Evaluate(e, Observed{}) {
			made[c.Name.Kind] = true
		}
	}
	for _, k := range kinds {
		if !made[k] && k != CheckConnect {
			t.Errorf("no check of kind %s made on the example fleet (helmrelease and manifests modes), the adopted one or the one on Argo CD", k)
		}
	}
}

// A report's JSON is what it was when names were strings, and reads back.
func TestCheckJSON(t *testing.T) {
	c := Check{Cluster: "stg-h100", Name: PoolDriverLabelCheck("h100"), Status: Fail, Expected: "x", Observed: "y"}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cluster":"stg-h100","name":"nodes/h100/driver-label","status":"fail","expected":"x","observed":"y"}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var back Check
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

// Reads lists what Observe reads in each chart mode, from the one list.
func TestReads(t *testing.T) {
	names := func(ks []ReadKind) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.GVK.Kind)
			if !slices.Contains(ReadKinds(), k) {
				t.Errorf("%s is not in ReadKinds", k.GVK)
			}
		}
		return out
	}
	if diff := cmp.Diff([]string{"Kustomization", "HelmRelease", "ClusterPolicy", "NVIDIADriver", "Node", "ResourceSlice", "DriverRollout"}, names(Reads(exampleExpect(t, "stg-h100")))); diff != "" {
		t.Errorf("helmrelease mode (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Kustomization", "Deployment", "ClusterPolicy", "NVIDIADriver", "Node", "ResourceSlice", "DriverRollout"}, names(Reads(manifestsExpect(t)))); diff != "" {
		t.Errorf("manifests mode (-want +got):\n%s", diff)
	}
}

// manifestsExpect is the example fleet's stg-h100 with its charts
// pre-rendered (operator Deployments, no HelmRelease).
func manifestsExpect(t *testing.T) Expected {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	f.Charts.Mode = fleet.ModeManifests
	// With the controller installed by render, as a fleet that names its
	// version does.
	f.Controller.Image = "registry.internal.example/gpufleet/gpufleet-controller"
	for _, r := range f.Releases {
		r.Controller = "v0.9.0"
	}
	return Expect(f, "stg-h100", rev)
}
