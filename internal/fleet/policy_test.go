package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestPolicyForIsResolvedOnce: Parse resolves each cluster's policy once,
// and what PolicyFor returns is the caller's: changing its lists leaves the
// next caller's policy alone.
func TestPolicyForIsResolvedOnce(t *testing.T) {
	f, err := Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := f.PolicyFor("prod-h100-b")
	got := f.PolicyFor("prod-h100-b")
	got.Windows[0].Days[0] = time.Wednesday
	got.Freezes[0].Reason = "changed"
	got.Health.NodeConditions[0] = "changed"
	got.Soak = time.Minute
	if diff := cmp.Diff(want, f.PolicyFor("prod-h100-b")); diff != "" {
		t.Errorf("a caller's change reached the fleet (-before +after):\n%s", diff)
	}
	if p := f.PolicyFor("no-such-cluster"); p.ParallelNodes != 2 || p.MaxUnavailable != (Amount{Value: 25, Percent: true}) || p.AutoApproveCanary {
		t.Errorf("an unknown cluster gets [policy] alone: %+v", p)
	}
	if diff := cmp.Diff(DefaultPolicy(), (&Fleet{}).PolicyFor("c")); diff != "" {
		t.Errorf("a fleet not built by Parse has the default policy:\n%s", diff)
	}
}

// TestPolicyDurationsWithinTheAPIBounds: the fleet parser refuses what the
// DriverRollout's schema would refuse in the cluster (0s, above 168h).
func TestPolicyDurationsWithinTheAPIBounds(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	for _, tt := range []struct{ value, want string }{
		{"0s", `"0s" is not a duration`},
		{"169h", "soak must be at most 168h, got 169h"},
	} {
		_, err := Parse("fleet.toml", []byte(strings.Replace(base, "[policy]\n", "[policy]\nsoak = \""+tt.value+"\"\n", 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("soak = %q: got %v, want a problem saying %q", tt.value, err, tt.want)
		}
	}
	if _, err := Parse("fleet.toml", []byte(strings.Replace(base, "[policy]\n", "[policy]\nsoak = \"168h\"\n", 1))); err != nil {
		t.Errorf("soak = 168h, the API's bound: %v", err)
	}
}

// TestPolicyActuator: the actuator defaults to the API's default, is
// overridden per environment and then per cluster like every other setting,
// and a value the CRD's enum would refuse is refused here at its key.
func TestPolicyActuator(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	f, err := Parse("fleet.toml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.ClusterNames() {
		if got := f.PolicyFor(c).Actuator; got != v1alpha1.DefaultActuator {
			t.Errorf("cluster %s: actuator %q unset, want the API's default %q", c, got, v1alpha1.DefaultActuator)
		}
	}
	c := f.ClusterNames()[0]
	env := f.Clusters[c].Environment
	edited := strings.Replace(base, "[policy]\n", "[policy]\nactuator = \"gpu-operator\"\n", 1) +
		"\n[policy.environments." + env + "]\nactuator = \"gpufleet\"\n" +
		"\n[policy.clusters." + c + "]\nactuator = \"gpu-operator\"\n"
	f, err = Parse("fleet.toml", []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.PolicyFor(c).Actuator; got != v1alpha1.ActuatorGPUOperator {
		t.Errorf("cluster override: actuator %q, want %q", got, v1alpha1.ActuatorGPUOperator)
	}
	bad := strings.Replace(base, "[policy]\n", "[policy]\nactuator = \"operator\"\n", 1)
	_, err = Parse("fleet.toml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "policy.actuator") || !strings.Contains(err.Error(), `"operator" is not an actuator`) {
		t.Errorf("actuator = \"operator\": got %v, want a problem at policy.actuator", err)
	}
	if err != nil && !strings.Contains(err.Error(), "fleet.toml:") {
		t.Errorf("the problem names no file and line: %v", err)
	}
}

// TestPolicyEvict: what a drain evicts is set fleet-wide and overridden per
// environment and cluster like every policy field; unset, it is the API's
// default.
func TestPolicyEvict(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/minimal.toml"), "[policy]\n", "[policy]\nevict = \"all\"\n", 1)
	src = strings.Replace(src, "[promotion]", "[policy.environments.prod]\nevict = \"gpu-pods\"\ngpu-pod-selector = \"uses in (nvidia-devices)\"\n\n[policy.clusters.prod-b]\nevict = \"all\"\n\n[promotion]", 1)
	f, err := Parse("f.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string]v1alpha1.EvictMode{"stg": v1alpha1.EvictAll, "prod-a": v1alpha1.EvictGPUPods, "prod-b": v1alpha1.EvictAll} {
		if got := f.PolicyFor(cluster).Evict; got != want {
			t.Errorf("%s: evict %s, want %s", cluster, got, want)
		}
	}
	if sel := f.PolicyFor("prod-a").GPUPodSelector; sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "uses" {
		t.Errorf("prod-a's GPU pod selector: %+v", sel)
	}
	if sel := f.PolicyFor("stg").GPUPodSelector; sel != nil {
		t.Errorf("stg has a GPU pod selector: %+v", sel)
	}
	if got := DefaultPolicy().Evict; got != v1alpha1.DefaultEvictMode {
		t.Errorf("the default policy evicts %s, the API's default is %s", got, v1alpha1.DefaultEvictMode)
	}
}
