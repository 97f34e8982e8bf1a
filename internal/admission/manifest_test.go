package admission

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/config"
)

var update = flag.Bool("update", false, "rewrite config/admission from the policies")

// TestConfigAdmissionIsGenerated: config/admission holds what Files writes,
// so that the installed policies are the ones tested here. -update (make
// generate) rewrites them.
func TestConfigAdmissionIsGenerated(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(config.AdmissionPolicies) {
		t.Errorf("Files writes %d files, config.AdmissionPolicies lists %d", len(files), len(config.AdmissionPolicies))
	}
	for _, name := range config.AdmissionPolicies {
		path := filepath.Join("..", "..", "config", name)
		if *update {
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("config/%s is not what internal/admission writes: run make generate (go test ./internal/admission -update)", name)
		}
	}
}

// TestControllerUserIsTheDeployments: the user the policies let through is
// the service account config/ creates and the Deployment runs as.
func TestControllerUserIsTheDeployments(t *testing.T) {
	read := func(file string) map[string]any {
		b, err := config.Install.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	sa := read("rbac/service_account.yaml")["metadata"].(map[string]any)
	if sa["name"] != config.ServiceAccount || sa["namespace"] != config.Namespace {
		t.Errorf("config/rbac creates service account %v/%v, the policies let %s through", sa["namespace"], sa["name"], ControllerUser)
	}
	dep := read("manager/manager.yaml")
	if got := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["serviceAccountName"]; got != config.ServiceAccount {
		t.Errorf("the Deployment runs as %v, the policies let %s through", got, ControllerUser)
	}
}
