package fleet

import (
	"slices"
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

// TestPolicyMaintenanceDomain: maintenance-domain and domain-size go
// through to every cluster's policy, overridable per environment, and a
// domain that could never start is refused at the key that makes it so.
func TestPolicyMaintenanceDomain(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/minimal.toml"), "[policy]\n", "[policy]\nmaintenance-domain = \"nvidia.com/gpu.clique\"\ndomain-size = 2\nmax-unavailable = 2\n", 1)
	src = strings.Replace(src, "[promotion]", "[policy.environments.prod]\nparallel-nodes = 4\nmax-unavailable = \"100%\"\ndomain-size = 4\n\n[promotion]", 1)
	f, err := Parse("f.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string]int{"stg": 2, "prod-a": 4} {
		if p := f.PolicyFor(cluster); p.MaintenanceDomain != v1alpha1.LabelGFDClique || p.DomainSize != want {
			t.Errorf("%s: maintenance domain %q of %d nodes, want %q of %d", cluster, p.MaintenanceDomain, p.DomainSize, v1alpha1.LabelGFDClique, want)
		}
	}

	for _, tt := range []struct {
		name, policy, override string
		want                   []string
	}{
		{
			name:   "a label that is none, a size out of bounds",
			policy: "maintenance-domain = \"gpu clique\"\ndomain-size = 0\n",
			want: []string{
				`f.toml:48:1: policy.maintenance-domain: "gpu clique" is not a node label key such as "nvidia.com/gpu.clique"`,
				`f.toml:49:1: policy.domain-size: domain-size must be from 1 to 1000 nodes, got 0`,
			},
		},
		{
			name:   "a label without its size",
			policy: "maintenance-domain = \"nvidia.com/gpu.clique\"\n",
			want:   []string{`f.toml:48:1: policy.maintenance-domain: maintenance-domain and domain-size go together`},
		},
		{
			name:     "a domain larger than parallel-nodes and max-unavailable, on the operator's actuator",
			policy:   "maintenance-domain = \"nvidia.com/gpu.clique\"\ndomain-size = 4\nmax-unavailable = 4\nparallel-nodes = 4\n",
			override: "[policy.clusters.prod-a]\nparallel-nodes = 2\nmax-unavailable = \"25%\"\n\n[policy.clusters.prod-b]\nactuator = \"gpu-operator\"\n\n",
			want: []string{
				`f.toml:54:1: policy.clusters.prod-a.parallel-nodes: domain-size (4) exceeds parallel-nodes (2) of cluster "prod-a": a maintenance domain starts as one unit`,
				`f.toml:55:1: policy.clusters.prod-a.max-unavailable: domain-size (4) exceeds max-unavailable (25% of 8 nodes: 2) of cluster "prod-a": a maintenance domain is taken out of service as one unit`,
				`f.toml:58:1: policy.clusters.prod-b.actuator: maintenance-domain needs actuator "gpufleet"`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(mustRead(t, "testdata/minimal.toml"), "[policy]\nparallel-nodes = 2\n", "[policy]\n"+tt.policy, 1)
			src = strings.Replace(src, "[promotion]", tt.override+"[promotion]", 1)
			_, err := Parse("f.toml", []byte(src))
			if err == nil {
				t.Fatal("parsed")
			}
			got := strings.Split(err.Error(), "\n")
			for _, w := range tt.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no error %q in:\n%v", w, err)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(got), len(tt.want), err)
			}
		})
	}
}

// TestPolicyDRA: dra-drivers and dra-plugin-selector go through to the
// policy, a bad driver name or selector is refused at its key, and
// maintenance-domain = "computedomain" stands for NVIDIA's ComputeDomain
// label.
func TestPolicyDRA(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/minimal.toml"), "[policy]\n",
		"[policy]\ndra-drivers = [\"gpu.nvidia.com\", \"gpu.example.com\"]\ndra-plugin-selector = \"app=dra-plugin\"\nmaintenance-domain = \"computedomain\"\ndomain-size = 2\nmax-unavailable = 2\n", 1)
	f, err := Parse("f.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p := f.PolicyFor("stg")
	if !slices.Equal(p.DRADrivers, []string{"gpu.nvidia.com", "gpu.example.com"}) {
		t.Errorf("dra-drivers: %v", p.DRADrivers)
	}
	if p.DRAPluginSelector == nil || p.DRAPluginSelector.MatchLabels["app"] != "dra-plugin" {
		t.Errorf("dra-plugin-selector: %+v", p.DRAPluginSelector)
	}
	if p.MaintenanceDomain != v1alpha1.LabelComputeDomain {
		t.Errorf("maintenance-domain computedomain: %q, want %q", p.MaintenanceDomain, v1alpha1.LabelComputeDomain)
	}
	if d := DefaultPolicy(); d.DRADrivers != nil || d.DRAPluginSelector != nil {
		t.Errorf("the default policy names DRA drivers %v or a plugin selector %v: the API's defaults are the one place", d.DRADrivers, d.DRAPluginSelector)
	}
	src = strings.Replace(mustRead(t, "testdata/minimal.toml"), "[policy]\n", "[policy]\ndra-drivers = [\"GPU Driver\"]\ndra-plugin-selector = \"=\"\n", 1)
	_, err = Parse("f.toml", []byte(src))
	for _, want := range []string{`policy.dra-drivers[0]: "GPU Driver" is not a DRA driver name`, `policy.dra-plugin-selector: "=" is not a label selector`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no error %q in: %v", want, err)
		}
	}
}
