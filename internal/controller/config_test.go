package controller

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// build runs kustomize on a folder of config/.
func build(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m
}

// TestInstallManifests checks what config/ installs: least-privilege RBAC
// (no Secrets, no wildcards) and a locked-down Deployment.
func TestInstallManifests(t *testing.T) {
	rbac := build(t, "../../config/rbac")
	for _, r := range rbac.Resources() {
		if k := r.GetKind(); k != "ClusterRole" && k != "Role" {
			continue
		}
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		rules, _ := obj["rules"].([]any)
		for _, rule := range rules {
			rm := rule.(map[string]any)
			for _, field := range []string{"apiGroups", "resources", "verbs"} {
				for _, v := range rm[field].([]any) {
					if v == "*" {
						t.Errorf("%s %s: wildcard in %s", r.GetKind(), r.GetName(), field)
					}
					if field == "resources" && v == "secrets" {
						t.Errorf("%s %s: access to Secrets", r.GetKind(), r.GetName())
					}
				}
			}
		}
	}

	mgr := build(t, "../../config/manager")
	var found bool
	for _, r := range mgr.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		found = true
		obj, _ := r.Map()
		spec := dig(obj, "spec", "template", "spec").(map[string]any)
		if dig(spec, "securityContext", "runAsNonRoot") != true {
			t.Errorf("pod does not run as non-root")
		}
		c := spec["containers"].([]any)[0].(map[string]any)
		if dig(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("root filesystem is writable")
		}
		if dig(c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("privilege escalation allowed")
		}
		if dig(c, "resources", "requests", "cpu") == nil || dig(c, "resources", "requests", "memory") == nil {
			t.Errorf("no resource requests")
		}
		args, _ := c["args"].([]any)
		if !slices.Contains(args, any("--leader-elect")) {
			t.Errorf("leader election off: %v", args)
		}
	}
	if !found {
		t.Error("config/manager has no Deployment")
	}

	// config/default also installs the CRD, through config/crd's
	// kustomization (generated output lives in config/crd/bases).
	if _, err := os.Stat("../../config/crd/kustomization.yaml"); err != nil {
		t.Logf("config/default not built: config/crd/kustomization.yaml is missing")
		return
	}
	all := build(t, "../../config/default")
	kinds := map[string]bool{}
	for _, r := range all.Resources() {
		kinds[r.GetKind()] = true
	}
	for _, k := range []string{"CustomResourceDefinition", "ClusterRole", "Role", "ServiceAccount", "Deployment", "Namespace",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !kinds[k] {
			t.Errorf("config/default has no %s", k)
		}
	}
	// The admission policy is cluster-scoped: the namespace config/default
	// sets on everything else must not reach it.
	for _, r := range all.Resources() {
		if k := r.GetKind(); strings.HasPrefix(k, "ValidatingAdmissionPolicy") && r.GetNamespace() != "" {
			t.Errorf("%s %s has namespace %q", k, r.GetName(), r.GetNamespace())
		}
	}
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}
