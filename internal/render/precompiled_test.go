package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// precompiledFleet is the example fleet with its stable release on the GPU
// Operator version op and precompiled drivers of branch 570, and, when
// rollout is set, r2026-10 as precompiled branch 580 rolling out to staging.
func precompiledFleet(t *testing.T, op string, rollout bool) *fleet.Fleet {
	t.Helper()
	src := string(mustReadFile(t, exampleFleet))
	for _, r := range []struct{ old, new string }{
		{`gpu-operator = "v25.3.4"`, `gpu-operator = "` + op + `"`},
		{`driver = "570.172.08"`, "driver = \"570\"\nprecompiled = true"},
	} {
		if !strings.Contains(src, r.old) {
			t.Fatalf("the example fleet no longer has %s", r.old)
		}
		src = strings.Replace(src, r.old, r.new, 1)
	}
	if rollout {
		src = strings.Replace(src, `driver = "580.95.05"`, "driver = \"580\"\nprecompiled = true", 1)
		src = strings.Replace(src, `stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }", 1)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPrecompiledNVIDIADriverEveryCRDVersion renders a precompiled release
// on every GPU Operator version in the shared charts (v24.6.2 … v26.7.0)
// and checks its NVIDIADriver: usePrecompiled set, the branch written as a
// quoted string (unquoted, YAML reads 570 as an integer and the string
// schema refuses it), the node selector and gpufleet.io/driver on the
// branch, and the object valid against that version's CRD both as the API
// server sees it and with every default taken out (as kubeconform does).
// The DriverRollout targets the branch and passes gpufleet's own CRD.
func TestPrecompiledNVIDIADriverEveryCRDVersion(t *testing.T) {
	ops := sharedtest.Operators(t)
	versions, err := os.ReadDir(filepath.Join(ops, "gpu-operator"))
	if err != nil {
		t.Fatal(err)
	}
	own := crdSet(t, filepath.Join("..", "..", "config", "crd", "bases", "gpufleet.io_driverrollouts.yaml"), false)
	seen26 := false
	for _, v := range versions {
		seen26 = seen26 || v.Name() == "v26.7.0"
		t.Run(v.Name(), func(t *testing.T) {
			crdPath := filepath.Join(ops, "gpu-operator", v.Name(), "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml")
			if _, err := os.Stat(crdPath); err != nil {
				t.Skipf("no NVIDIADriver CRD: %v", err)
			}
			out, err := Render(precompiledFleet(t, v.Name(), false))
			if err != nil {
				t.Fatal(err)
			}
			raw := out.Files["clusters/prod-a100/config/nvidiadriver-a100-mig-570.yaml"]
			if raw == nil {
				t.Fatalf("no NVIDIADriver named a100-mig-570; config files: %v", configFiles(out, "prod-a100"))
			}
			if !bytes.Contains(raw, []byte(`version: "570"`)) {
				t.Errorf("the branch must be written as a quoted string:\n%s", raw)
			}
			objs, err := crdcheck.DecodeObjects(raw)
			if err != nil || len(objs) != 1 {
				t.Fatalf("decode: %v (%d objects)", err, len(objs))
			}
			spec, _ := objs[0].Object["spec"].(map[string]any)
			if spec["usePrecompiled"] != true || spec["version"] != "570" {
				t.Errorf("spec.usePrecompiled = %v, spec.version = %#v; want true and \"570\"", spec["usePrecompiled"], spec["version"])
			}
			sel, _ := spec["nodeSelector"].(map[string]any)
			if sel[v1alpha1.LabelDriver] != "570" {
				t.Errorf("nodeSelector[%s] = %#v, want \"570\"", v1alpha1.LabelDriver, sel[v1alpha1.LabelDriver])
			}
			for _, dropped := range []bool{false, true} {
				for _, p := range crdSet(t, crdPath, dropped).Validate(t.Context(), objs[0]) {
					t.Errorf("defaults dropped %t: %s: %s", dropped, p.Object(), p.Message())
				}
			}
			// The check has teeth: the branch unquoted is an integer the
			// schema refuses (what the chart's own template wrote before v26.7).
			bare, err := crdcheck.DecodeObjects(bytes.Replace(raw, []byte(`version: "570"`), []byte(`version: 570`), 1))
			if err != nil || len(bare) != 1 {
				t.Fatalf("decode: %v", err)
			}
			if len(crdSet(t, crdPath, false).Validate(t.Context(), bare[0])) == 0 {
				t.Error("an unquoted branch (an integer) must fail the NVIDIADriver schema")
			}
			dr, err := crdcheck.DecodeObjects(out.Files["clusters/prod-a100/lifecycle/driverrollout.yaml"])
			if err != nil || len(dr) != 1 {
				t.Fatalf("decode DriverRollout: %v (%d objects)", err, len(dr))
			}
			if got := dr[0].Object["spec"].(map[string]any)["targetVersion"]; got != "570" {
				t.Errorf("DriverRollout targetVersion = %#v, want \"570\"", got)
			}
			for _, p := range own.Validate(t.Context(), dr[0]) {
				t.Errorf("DriverRollout: %s: %s", p.Message(), p.Object())
			}
		})
	}
	if !seen26 {
		t.Error("the shared charts lack v26.7.0, the version whose NVIDIADriver this must cover")
	}
}

// TestPrecompiledRolloutDeclaresBothDrivers rolls a precompiled branch out
// over a full version: each NVIDIADriver carries its own release's
// setting, since usePrecompiled belongs to the driver, not to the cluster.
func TestPrecompiledRolloutDeclaresBothDrivers(t *testing.T) {
	f := precompiledFleet(t, "v25.3.4", true)
	// The stable release goes back to a full version: compiled → precompiled.
	f.Releases["r2026-06"].Driver, f.Releases["r2026-06"].Precompiled = "570.172.08", false
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]any{
		"clusters/stg-h100/config/nvidiadriver-h100-580.yaml":        true,
		"clusters/stg-h100/config/nvidiadriver-h100-570-172-08.yaml": nil,
	} {
		objs, err := crdcheck.DecodeObjects(out.Files[file])
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v (%d objects); config files: %v", file, err, len(objs), configFiles(out, "stg-h100"))
		}
		if got := objs[0].Object["spec"].(map[string]any)["usePrecompiled"]; got != want {
			t.Errorf("%s: usePrecompiled = %v, want %v", file, got, want)
		}
	}
}

func crdSet(t *testing.T, path string, withoutDefaults bool) *crdcheck.Set {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(mustReadFile(t, path), &crd); err != nil {
		t.Fatal(err)
	}
	if withoutDefaults {
		for i := range crd.Spec.Versions {
			if s := crd.Spec.Versions[i].Schema; s != nil {
				dropDefaults(s.OpenAPIV3Schema)
			}
		}
	}
	set, err := crdcheck.NewSet(&crd)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func configFiles(out *Output, cluster string) []string {
	var names []string
	for p := range out.Files {
		if strings.HasPrefix(p, "clusters/"+cluster+"/config/") {
			names = append(names, p)
		}
	}
	return names
}
