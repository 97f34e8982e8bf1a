package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The rollout contract has four holders: the API's constants
// (api/v1alpha1/driverrollout_defaults.go), the CRD's kubebuilder:default
// markers, the fleet parser (fleet.DefaultPolicy, DriverRolloutFor) and the
// planner (planner.SettingsFor). Each test below fails when one of them
// changes alone.

const crdFile = "../../config/crd/bases/gpufleet.io_driverrollouts.yaml"

func driverRolloutCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crdcheck.ParseCRDs(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 {
		t.Fatalf("%s holds %d CRDs, want 1", crdFile, len(crds))
	}
	return crds[0]
}

// TestCRDDefaultsAreTheAPIConstants: the markers' literals (which cannot
// name a Go constant) say what the exported defaults say.
func TestCRDDefaultsAreTheAPIConstants(t *testing.T) {
	fields := crdcheck.Fields(driverRolloutCRD(t))[v1alpha1.GroupVersion.Version]
	if fields == nil {
		t.Fatalf("the CRD serves no version %s", v1alpha1.GroupVersion.Version)
	}
	counts := map[string]int{
		"spec.parallelNodes":  v1alpha1.DefaultParallelNodes,
		"spec.maxUnavailable": v1alpha1.DefaultMaxUnavailable,
		"spec.failureBudget":  v1alpha1.DefaultFailureBudget,
	}
	for path, want := range counts {
		f, ok := fields[path]
		if !ok {
			t.Errorf("%s: not in the CRD", path)
			continue
		}
		got := 0 // no default: the API server leaves the Go zero
		if f.Default != nil {
			if err := json.Unmarshal(f.Default, &got); err != nil {
				t.Errorf("%s: default %s is not a count: %v", path, f.Default, err)
				continue
			}
		}
		if got != want {
			t.Errorf("%s: the CRD defaults to %d, the API's constant is %d", path, got, want)
		}
	}
	for path, want := range map[string]string{"spec.actuator": string(v1alpha1.DefaultActuator), "spec.evict.mode": string(v1alpha1.DefaultEvictMode)} {
		var got string
		if f, ok := fields[path]; !ok || json.Unmarshal(f.Default, &got) != nil || got != want {
			t.Errorf("%s: the CRD defaults to %s, the API's constant is %q", path, fields[path].Default, want)
		}
	}
	durations := map[string]time.Duration{
		"spec.soak":              v1alpha1.DefaultSoak,
		"spec.timeouts.drain":    v1alpha1.DefaultDrainTimeout,
		"spec.timeouts.install":  v1alpha1.DefaultInstallTimeout,
		"spec.timeouts.validate": v1alpha1.DefaultValidateTimeout,
	}
	bound := "duration('" + strings.TrimSuffix(v1alpha1.MaxStepDuration.String(), "0m0s") + "')"
	for path, want := range durations {
		f := fields[path]
		var s string
		if err := json.Unmarshal(f.Default, &s); err != nil {
			t.Errorf("%s: default %q is not a string: %v", path, f.Default, err)
			continue
		}
		got, err := time.ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("%s: the CRD defaults to %q, the API's constant is %s", path, s, want)
		}
		if len(f.Rules) != 1 || !strings.Contains(f.Rules[0].Rule, "> duration('0s')") || !strings.Contains(f.Rules[0].Rule, "<= "+bound) {
			t.Errorf("%s: rules %+v, want one refusing 0s and anything above %s", path, f.Rules, bound)
		}
	}
}

// TestCRDRefusesZeroDurations: an explicit 0s cannot be told from unset by
// the planner, so the API server refuses it, as the fleet parser does.
func TestCRDRefusesZeroDurations(t *testing.T) {
	set, err := crdcheck.NewSet(driverRolloutCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range [][]string{{"spec", "soak"}, {"spec", "timeouts", "drain"}, {"spec", "timeouts", "install"}, {"spec", "timeouts", "validate"}} {
		obj := rolloutObject(t, DriverRolloutFor("r", fleet.DefaultPolicy(), "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "h100"}))
		if err := unstructured.SetNestedField(obj.Object, "0s", path...); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range set.Validate(context.Background(), obj) {
			got = append(got, p.Message())
		}
		if !strings.Contains(strings.Join(got, "\n"), strings.Join(path, ".")+": Invalid value") {
			t.Errorf("%s: 0s: problems %q, want it refused", strings.Join(path, "."), got)
		}
	}
	if _, err := fleet.Parse("fleet.toml", []byte(minimalFleet)); err != nil {
		t.Fatalf("the minimal fleet is refused: %v", err)
	}
	for _, key := range []string{"soak", "drain-timeout", "install-timeout", "validate-timeout"} {
		if _, err := fleet.Parse("fleet.toml", []byte(minimalFleet+"\n[policy]\n"+key+" = \"0s\"\n")); err == nil {
			t.Errorf("fleet: %s = \"0s\" accepted, want refused like the CRD refuses it", key)
		}
	}
}

const minimalFleet = `
[releases.r1]
gpu-operator = "v25.10.1"
network-operator = "v25.7.0"
driver = "580.95.05"

[clusters.c1]
environment = "stg"
context = "c1"
pools = [{ name = "h100", product = "NVIDIA-H100-80GB-HBM3", nodes = 4 }]

[[waves]]
name = "stg"
clusters = ["c1"]

[promotion]
stable = "r1"
`

// TestDefaultsAgree: a spec that sets nothing means the same to the
// planner whether the API server defaulted it from the CRD or a Go caller
// left it zero, and that is what the fleet file's default policy renders.
func TestDefaultsAgree(t *testing.T) {
	bare := &v1alpha1.DriverRollout{Spec: v1alpha1.DriverRolloutSpec{TargetVersion: "580.95.05", PreviousVersion: "570.172.08"}}
	bare.APIVersion, bare.Kind = v1alpha1.GroupVersion.String(), v1alpha1.KindDriverRollout
	obj := rolloutObject(t, bare)
	// Present but empty, so the API server defaults the fields inside.
	if err := unstructured.SetNestedMap(obj.Object, map[string]any{}, "spec", "timeouts"); err != nil {
		t.Fatal(err)
	}
	defaulted := applyCRDDefaults(t, obj)
	for _, total := range []int{1, 4, 10, 200} {
		fromGo := planner.SettingsFor(&bare.Spec, total)
		if diff := cmp.Diff(fromGo, planner.SettingsFor(&defaulted.Spec, total)); diff != "" {
			t.Errorf("%d nodes: the planner's defaults differ from the CRD's (-planner +CRD):\n%s", total, diff)
		}
		if diff := cmp.Diff(fromGo, settingsOf(fleet.DefaultPolicy(), total)); diff != "" {
			t.Errorf("%d nodes: the planner's defaults differ from the fleet file's (-planner +fleet):\n%s", total, diff)
		}
	}
}

// TestPolicyRoundTrip: every number of a fleet policy reaches the planner
// through the DriverRollout render writes and the API server defaults.
func TestPolicyRoundTrip(t *testing.T) {
	custom := fleet.DefaultPolicy()
	custom.ParallelNodes = 3
	custom.MaxUnavailable = fleet.Amount{Value: 25, Percent: true}
	custom.Soak = 2 * time.Hour
	custom.FailureBudget = 2
	custom.DrainTimeout = 45 * time.Minute
	custom.InstallTimeout = 25 * time.Minute
	custom.ValidateTimeout = 7 * time.Minute
	custom.WaitForPods = &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}
	custom.WaitTimeout = 4 * time.Hour
	counted := custom
	counted.MaxUnavailable = fleet.Amount{Value: 4}
	for name, p := range map[string]fleet.Policy{"default": fleet.DefaultPolicy(), "custom": custom, "counted": counted} {
		dr := DriverRolloutFor("r", p, "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "h100"})
		applied := applyCRDDefaults(t, rolloutObject(t, dr))
		for _, total := range []int{1, 3, 10, 57} {
			if diff := cmp.Diff(settingsOf(p, total), planner.SettingsFor(&applied.Spec, total)); diff != "" {
				t.Errorf("%s, %d nodes: fleet → DriverRollout → planner lost something (-fleet +planner):\n%s", name, total, diff)
			}
		}
	}
}

// TestEvictRoundTrip: what a drain evicts reaches the controller's reading
// of the spec (planner.EvictModeOf, planner.GPUPodSelector) through the
// DriverRollout render writes and the API server's defaults, and an unset
// spec means what the fleet file's default policy renders.
func TestEvictRoundTrip(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"uses": "nvidia-devices"}}
	all := fleet.DefaultPolicy()
	all.Evict = v1alpha1.EvictAll
	withSelector := fleet.DefaultPolicy()
	withSelector.GPUPodSelector = sel
	for name, p := range map[string]fleet.Policy{"default": fleet.DefaultPolicy(), "all": all, "selector": withSelector} {
		dr := DriverRolloutFor("r", p, "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "h100"})
		applied := applyCRDDefaults(t, rolloutObject(t, dr))
		if got := planner.EvictModeOf(&applied.Spec); got != p.Evict {
			t.Errorf("%s: evict mode %s reaches the controller as %s", name, p.Evict, got)
		}
		if diff := cmp.Diff(p.GPUPodSelector, applied.Spec.Evict.GPUPodSelector); diff != "" {
			t.Errorf("%s: the GPU pod selector (-fleet +controller):\n%s", name, diff)
		}
	}
	bare := &v1alpha1.DriverRollout{Spec: v1alpha1.DriverRolloutSpec{TargetVersion: "580.95.05", PreviousVersion: "570.172.08"}}
	bare.APIVersion, bare.Kind = v1alpha1.GroupVersion.String(), v1alpha1.KindDriverRollout
	if got := planner.EvictModeOf(&applyCRDDefaults(t, rolloutObject(t, bare)).Spec); got != fleet.DefaultPolicy().Evict || got != planner.EvictModeOf(&bare.Spec) {
		t.Errorf("an unset evict is %s to the API server, %s to Go, %s to the fleet file", got, planner.EvictModeOf(&bare.Spec), fleet.DefaultPolicy().Evict)
	}
}

// TestMaintenanceDomainRoundTrip: the fleet file's maintenance-domain and
// domain-size reach the DriverRollout the controller reads, through the
// API server's defaults, and a policy without them renders none.
func TestMaintenanceDomainRoundTrip(t *testing.T) {
	p := fleet.DefaultPolicy()
	p.MaintenanceDomain, p.DomainSize, p.ParallelNodes, p.MaxUnavailable = v1alpha1.LabelGFDClique, 4, 4, fleet.Amount{Value: 4}
	applied := applyCRDDefaults(t, rolloutObject(t, DriverRolloutFor("r", p, "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "gb200"})))
	if diff := cmp.Diff(&v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 4}, applied.Spec.MaintenanceDomain); diff != "" {
		t.Errorf("maintenance domain (-fleet +controller):\n%s", diff)
	}
	if d := DriverRolloutFor("r", fleet.DefaultPolicy(), "580.95.05", "570.172.08", nil).Spec.MaintenanceDomain; d != nil {
		t.Errorf("the default policy renders a maintenance domain: %+v", d)
	}
}

// settingsOf is what the planner must make of policy p over total nodes.
func settingsOf(p fleet.Policy, total int) planner.Settings {
	return planner.Settings{
		Parallel:        p.ParallelNodes,
		MaxUnavailable:  p.MaxUnavailable.Of(total),
		Soak:            p.Soak,
		DrainTimeout:    p.DrainTimeout,
		InstallTimeout:  p.InstallTimeout,
		ValidateTimeout: p.ValidateTimeout,
		FailureBudget:   p.FailureBudget,
		JobWait:         map[bool]time.Duration{true: p.WaitTimeout}[p.WaitForPods != nil],
	}
}

func rolloutObject(t *testing.T, dr *v1alpha1.DriverRollout) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(dr)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return obj
}

// applyCRDDefaults defaults obj with the generated CRD's schema, as the API
// server does on create, and decodes the result.
func applyCRDDefaults(t *testing.T, obj *unstructured.Unstructured) *v1alpha1.DriverRollout {
	t.Helper()
	crd := driverRolloutCRD(t)
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	u := obj.DeepCopy().Object
	defaulting.Default(u, st)
	out := &v1alpha1.DriverRollout{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDRARoundTrip: the fleet file's dra-drivers and dra-plugin-selector
// reach the DriverRollout the controller reads, through the API server's
// defaults; a policy without them renders no spec.dra, and the controller
// then applies the API's one set of defaults.
func TestDRARoundTrip(t *testing.T) {
	p := fleet.DefaultPolicy()
	p.DRADrivers = []string{"gpu.example.com"}
	p.DRAPluginSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dra-plugin"}}
	applied := applyCRDDefaults(t, rolloutObject(t, DriverRolloutFor("r", p, "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "gb200"})))
	if got := v1alpha1.DRADriversOf(&applied.Spec); !slices.Equal(got, p.DRADrivers) {
		t.Errorf("DRA drivers %v reach the controller as %v", p.DRADrivers, got)
	}
	if diff := cmp.Diff(p.DRAPluginSelector, v1alpha1.DRAKubeletPluginSelectorOf(&applied.Spec)); diff != "" {
		t.Errorf("the plugin selector (-fleet +controller):\n%s", diff)
	}
	dflt := applyCRDDefaults(t, rolloutObject(t, DriverRolloutFor("r", fleet.DefaultPolicy(), "580.95.05", "570.172.08", nil)))
	if got := v1alpha1.DRADriversOf(&dflt.Spec); !slices.Equal(got, []string{"gpu.nvidia.com", "compute-domain.nvidia.com"}) {
		t.Errorf("the default DRA drivers: %v", got)
	}
	sel, err := metav1.LabelSelectorAsSelector(v1alpha1.DRAKubeletPluginSelectorOf(&dflt.Spec))
	if err != nil || sel.String() != "app.kubernetes.io/name=nvidia-dra-driver-gpu,nvidia-dra-driver-gpu-component=kubelet-plugin" {
		t.Errorf("the default plugin selector: %v %v", sel, err)
	}
}
