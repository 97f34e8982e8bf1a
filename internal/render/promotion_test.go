package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// withRollout renders the example fleet with a rollout line added.
func withRollout(t *testing.T, rollout string) *Output {
	t.Helper()
	src := strings.Replace(string(mustReadFile(t, exampleFleet)), `stable = "r2026-06"`, "stable = \"r2026-06\"\n"+rollout, 1)
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReleaseFollowsPromotion(t *testing.T) {
	out := withRollout(t, `rollout = { release = "r2026-10", wave = "prod-h100", stage = "canary" }`)
	want := map[string]struct {
		gpuOperator string
		drivers     []string
		target      string
	}{
		// staging has the new release; so does the prod-h100 canary cluster.
		"stg-h100":    {"v25.10.1", []string{"h100-570-172-08", "h100-580-95-05"}, "580.95.05"},
		"prod-h100-a": {"v25.10.1", []string{"h100-570-172-08", "h100-580-95-05"}, "580.95.05"},
		// the rest of the wave, and later waves, keep the stable release.
		"prod-h100-b": {"v25.3.4", []string{"h100-570-172-08", "h200-570-172-08"}, "570.172.08"},
		"prod-a100":   {"v25.3.4", []string{"a100-570-172-08", "a100-mig-570-172-08"}, "570.172.08"},
	}
	for cluster, w := range want {
		var hr helmv2.HelmRelease
		if err := yaml.Unmarshal(out.Files["clusters/"+cluster+"/operators/helmrelease-gpu-operator.yaml"], &hr); err != nil {
			t.Fatal(err)
		}
		if got := hr.Spec.Chart.Spec.Version; got != w.gpuOperator {
			t.Errorf("%s: gpu-operator %s, want %s", cluster, got, w.gpuOperator)
		}
		for _, d := range w.drivers {
			if _, ok := out.Files["clusters/"+cluster+"/config/nvidiadriver-"+d+".yaml"]; !ok {
				t.Errorf("%s: no NVIDIADriver %s", cluster, d)
			}
		}
		var dr v1alpha1.DriverRollout
		if err := yaml.Unmarshal(out.Files["clusters/"+cluster+"/lifecycle/driverrollout.yaml"], &dr); err != nil {
			t.Fatal(err)
		}
		if dr.Spec.TargetVersion != w.target || dr.Spec.PreviousVersion != "570.172.08" {
			t.Errorf("%s: DriverRollout %s → %s, want 570.172.08 → %s", cluster, dr.Spec.PreviousVersion, dr.Spec.TargetVersion, w.target)
		}
	}
}

func TestNVIDIADriverFieldsFollowOperatorVersion(t *testing.T) {
	src := strings.Replace(string(mustReadFile(t, exampleFleet)), `gpu-operator = "v25.3.4"`, `gpu-operator = "v24.9.2"`, 1)
	src = strings.Replace(src, `gpu-operator = "v25.10.1"`+"\nnetwork-operator = \"v25.10.0\"\nofed-driver = \"doca3.2.0-25.10-1.2.8.0-2\"\ndriver = \"580.95.05\"", `gpu-operator = "v26.7.0"`+"\nnetwork-operator = \"v26.4.1\"\nofed-driver = \"doca3.4.1-26.04-1.1.0.0-1\"\ndriver = \"580.95.05\"", 1)
	src = strings.Replace(src, `stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }", 1)
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	old := string(out.Files["clusters/prod-a100/config/nvidiadriver-a100-570-172-08.yaml"])
	if strings.Contains(old, "kernelModuleType") || strings.Contains(old, "upgradePolicy") {
		t.Errorf("an NVIDIADriver for gpu-operator v24.9.2 has fields that version lacks:\n%s", old)
	}
	// On staging, both drivers belong to the cluster's release now: v26.7.0.
	newer := string(out.Files["clusters/stg-h100/config/nvidiadriver-h100-580-95-05.yaml"])
	if !strings.Contains(newer, "kernelModuleType: auto") || !strings.Contains(newer, "autoUpgrade: false") {
		t.Errorf("an NVIDIADriver for gpu-operator v26.7.0 must set kernelModuleType and turn autoUpgrade off:\n%s", newer)
	}
}

func TestOCIChartRepository(t *testing.T) {
	src := strings.Replace(string(mustReadFile(t, exampleFleet)), `repository = "https://helm.ngc.nvidia.com/nvidia"`, `repository = "oci://registry.example.internal/nvidia"`, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := renderFile(t, path)
	repo := string(out.Files["clusters/stg-h100/operators/helmrepository.yaml"])
	if !strings.Contains(repo, "type: oci") || !strings.Contains(repo, "url: oci://registry.example.internal/nvidia") {
		t.Errorf("an OCI chart source must render an OCI HelmRepository:\n%s", repo)
	}
}
