package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// operatorFleet is the example fleet on GPU Operator version op with the
// gpu-operator actuator, r2026-10 rolling out to staging.
func operatorFleet(t *testing.T, op string) *fleet.Fleet {
	t.Helper()
	// The example's releases name an OFED driver, which the gpu-operator
	// actuator cannot move with its managed NICs.
	src := fleettest.WithoutOFEDDriver(string(mustReadFile(t, exampleFleet)))
	for _, r := range []struct{ old, new string }{
		{`gpu-operator = "v25.3.4"`, `gpu-operator = "` + op + `"`},
		{`gpu-operator = "v25.10.1"`, `gpu-operator = "` + op + `"`},
		{"[policy]\n", "[policy]\nactuator = \"gpu-operator\"\n"},
		{`stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }"},
	} {
		if !strings.Contains(src, r.old) {
			t.Fatalf("the example fleet no longer has %q", r.old)
		}
		src = strings.ReplaceAll(src, r.old, r.new)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestOperatorActuatorRender: one NVIDIADriver per pool, named by the pool,
// at the driver of the release the cluster runs, selecting no driver label;
// the operator's upgrade policy on from the same policy numbers, as chart
// values and (v26.7 on) on the NVIDIADriver; the DriverRollout says the
// actuator. Every NVIDIADriver fits its release's CRD at every version.
func TestOperatorActuatorRender(t *testing.T) {
	ops := sharedtest.Operators(t)
	versions, err := os.ReadDir(filepath.Join(ops, "gpu-operator"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		t.Run(v.Name(), func(t *testing.T) {
			f := operatorFleet(t, v.Name())
			out, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			var cfg []string
			for _, p := range configFiles(out, "stg-h100") {
				if !strings.HasSuffix(p, "/kustomization.yaml") {
					cfg = append(cfg, p)
				}
			}
			if len(cfg) != 1 || !strings.HasSuffix(cfg[0], "/nvidiadriver-"+OperatorNVIDIADriverName("h100")+".yaml") {
				t.Fatalf("stg-h100 config files %v, want one NVIDIADriver named after the pool", cfg)
			}
			objs, err := crdcheck.DecodeObjects(out.Files[cfg[0]])
			if err != nil || len(objs) != 1 {
				t.Fatalf("decode: %v", err)
			}
			spec := objs[0].Object["spec"].(map[string]any)
			if spec["version"] != "580.95.05" {
				t.Errorf("version %v, want the rolling release's 580.95.05 in place", spec["version"])
			}
			if sel := spec["nodeSelector"].(map[string]any); sel[v1alpha1.LabelDriver] != nil {
				t.Errorf("nodeSelector %v selects on %s: no label flip on this path", sel, v1alpha1.LabelDriver)
			}
			if tol, _ := spec["tolerations"].([]any); len(tol) != 1 || tol[0].(map[string]any)["key"] != v1alpha1.TaintQuarantined {
				t.Errorf("tolerations %v, want the quarantine taint's (or one quarantined node wedges the operator)", spec["tolerations"])
			}
			up, hasUp := spec["upgradePolicy"].(map[string]any)
			if v.Name() >= "v26.7.0" {
				if !hasUp || up["autoUpgrade"] != true || up["podDeletion"] == nil {
					t.Errorf("v26.7 NVIDIADriver upgradePolicy %v, want the operator's policy on", spec["upgradePolicy"])
				}
			} else if hasUp {
				t.Errorf("upgradePolicy written for %s, whose NVIDIADriver has none", v.Name())
			}
			crd := filepath.Join(ops, "gpu-operator", v.Name(), "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml")
			if _, err := os.Stat(crd); err == nil {
				for _, p := range crdSet(t, crd, false).Validate(t.Context(), objs[0]) {
					t.Errorf("%s: %s", p.Object(), p.Message())
				}
			}
			pol := f.PolicyFor("stg-h100")
			values := GPUOperatorValuesFor(f, "stg-h100", f.Releases["r2026-10"])
			chart := values["driver"].(map[string]any)["upgradePolicy"].(map[string]any)
			if chart["autoUpgrade"] != true || chart["maxParallelUpgrades"] != pol.ParallelNodes || chart["maxUnavailable"] != pol.MaxUnavailable.String() || chart["gpuPodDeletion"] == nil {
				t.Errorf("chart upgradePolicy %v, want autoUpgrade, parallel %d, maxUnavailable %s, gpuPodDeletion", chart, pol.ParallelNodes, pol.MaxUnavailable)
			}
			dr, err := crdcheck.DecodeObjects(out.Files["clusters/stg-h100/lifecycle/driverrollout.yaml"])
			if err != nil || len(dr) != 1 {
				t.Fatalf("decode DriverRollout: %v", err)
			}
			if got := dr[0].Object["spec"].(map[string]any)["actuator"]; got != string(v1alpha1.ActuatorGPUOperator) {
				t.Errorf("DriverRollout spec.actuator %v", got)
			}
			tgt, err := TargetFor(f, "stg-h100")
			if err != nil || len(tgt.NVIDIADrivers) != 1 || tgt.NVIDIADrivers[0] != OperatorNVIDIADriverName("h100") {
				t.Errorf("TargetFor: %v %v", tgt.NVIDIADrivers, err)
			}
		})
	}
}

// TestGPUFleetActuatorValuesUnchanged: the default actuator keeps the
// operator's automatic upgrade off and writes no actuator on the rollout.
func TestGPUFleetActuatorValuesUnchanged(t *testing.T) {
	f, err := fleet.Load(exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	v := GPUOperatorValuesFor(f, "stg-h100", f.Releases["r2026-06"])
	if up := v["driver"].(map[string]any)["upgradePolicy"].(map[string]any); len(up) != 1 || up["autoUpgrade"] != false {
		t.Errorf("upgradePolicy %v, want autoUpgrade false alone", up)
	}
	// The sets differ by MIG strategy (prod-a100 has MIG pools) and
	// driver.rdma (the H100 clusters' pools use GPUDirect RDMA) only:
	// gpufleet's values alone, with RDMA, with MIG.
	sets := GPUOperatorValueSets(f, f.Releases["r2026-06"])
	if len(sets) != 3 {
		t.Errorf("%d value sets, want 3 (neither, RDMA, MIG)", len(sets))
	}
	for _, set := range sets {
		if up := set.Values["driver"].(map[string]any)["upgradePolicy"].(map[string]any); len(up) != 1 || up["autoUpgrade"] != false {
			t.Errorf("upgradePolicy %v, want autoUpgrade false alone", up)
		}
	}
}

// TestOperatorUpgradePolicyEvicts: on the gpu-operator actuator the
// policy's evict and wait for jobs become the operator's: GPU pod deletion
// always, its drain only for evict = "all" or the pods gpu-pod-selector
// names, its waitForCompletion for the jobs wait-for-pods names.
func TestOperatorUpgradePolicyEvicts(t *testing.T) {
	base := fleet.DefaultPolicy()
	base.Actuator = v1alpha1.ActuatorGPUOperator
	all := base
	all.Evict = v1alpha1.EvictAll
	selected := base
	selected.GPUPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"uses": "nvidia-devices"}}
	waits := base
	waits.WaitForPods = &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}
	waits.WaitTimeout = 4 * time.Hour
	for _, tt := range []struct {
		name        string
		pol         fleet.Policy
		drain       bool
		podSelector string
		wait        map[string]any
	}{
		{"default", base, false, "", map[string]any{"timeoutSeconds": 0}},
		{"all", all, true, "", map[string]any{"timeoutSeconds": 0}},
		{"selector", selected, true, "uses=nvidia-devices", map[string]any{"timeoutSeconds": 0}},
		{"wait", waits, false, "", map[string]any{"podSelector": "job=train", "timeoutSeconds": int64(4 * 3600)}},
	} {
		up := upgradePolicy(&tt.pol, true, true)
		drain := up["drain"].(map[string]any)
		if drain["enable"] != tt.drain || drain["podSelector"] != tt.podSelector {
			t.Errorf("%s: drain %v, want enable %t podSelector %q", tt.name, drain, tt.drain, tt.podSelector)
		}
		if _, ok := up["gpuPodDeletion"]; !ok {
			t.Errorf("%s: no gpuPodDeletion in %v", tt.name, up)
		}
		if diff := cmp.Diff(tt.wait, up["waitForCompletion"]); diff != "" {
			t.Errorf("%s: waitForCompletion (-want +got):\n%s", tt.name, diff)
		}
	}
}
