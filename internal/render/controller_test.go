package render

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// controllerFleet(t) is testdata/controller/fleet.toml: releases that name
// controller versions.
func controllerFleet(t testing.TB) string {
	return string(mustReadFile(t, "testdata/controller/fleet.toml"))
}

func parseFleet(t *testing.T, src string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// controllerInstall renders f and returns cluster's controller install by
// kind/name.
func controllerInstall(t *testing.T, f *fleet.Fleet, cluster string) map[string]map[string]any {
	t.Helper()
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := out.Files["clusters/"+cluster+"/operators/"+ControllerFile]
	if !ok {
		return nil
	}
	if !strings.Contains(string(out.Files["clusters/"+cluster+"/operators/kustomization.yaml"]), ControllerFile) {
		t.Errorf("%s: the operators step's kustomization.yaml does not list %s", cluster, ControllerFile)
	}
	objs := map[string]map[string]any{}
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o == nil {
			continue
		}
		name := o["metadata"].(map[string]any)["name"].(string)
		objs[o["kind"].(string)+"/"+name] = o
	}
	return objs
}

func controllerImageIn(t *testing.T, objs map[string]map[string]any) string {
	t.Helper()
	dep := objs["Deployment/gpufleet-controller"]
	if dep == nil {
		t.Fatalf("no controller Deployment among %v", keys(objs))
	}
	c := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	return c["image"].(string)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestControllerInstall(t *testing.T) {
	f := parseFleet(t, controllerFleet(t))
	objs := controllerInstall(t, f, "stg")
	for _, want := range []string{
		"CustomResourceDefinition/driverrollouts.gpufleet.io", "Namespace/gpufleet-system", "ServiceAccount/gpufleet-controller",
		"ClusterRole/gpufleet-controller", "ClusterRoleBinding/gpufleet-controller", "Role/gpufleet-controller", "RoleBinding/gpufleet-controller",
		"Deployment/gpufleet-controller", "Service/gpufleet-controller-metrics",
		"ValidatingAdmissionPolicy/gpufleet-node-ownership", "ValidatingAdmissionPolicyBinding/gpufleet-node-ownership",
		"ValidatingAdmissionPolicy/gpufleet-rollout-status", "ValidatingAdmissionPolicyBinding/gpufleet-rollout-status",
	} {
		if objs[want] == nil {
			t.Errorf("the controller's install has no %s (has %v)", want, keys(objs))
		}
	}
	if got, want := controllerImageIn(t, objs), "registry.internal.example/gpufleet/gpufleet-controller:v0.9.0"; got != want {
		t.Errorf("image %q, want %q", got, want)
	}
	crd := objs["CustomResourceDefinition/driverrollouts.gpufleet.io"]["metadata"].(map[string]any)
	if a, _ := crd["annotations"].(map[string]any); a[kustomizePrune] != kustomizePruneDisabled {
		t.Errorf("the CRD may be pruned (annotations %v): deleting it deletes every DriverRollout", a)
	}
	if got := ControllerImage(f, "stg"); got != "registry.internal.example/gpufleet/gpufleet-controller:v0.9.0" {
		t.Errorf("ControllerImage = %q", got)
	}

	// A cluster on Kubernetes 1.29 does not serve the admission policies' v1.
	old := controllerInstall(t, f, "old")
	if old["ValidatingAdmissionPolicy/gpufleet-node-ownership"] != nil || old["ValidatingAdmissionPolicy/gpufleet-rollout-status"] != nil ||
		old["Deployment/gpufleet-controller"] == nil {
		t.Errorf("cluster on 1.29: %v", keys(old))
	}
}

// TestControllerFollowsTheWaves: a new controller version reaches the
// clusters as the rollout does, the canary cluster first, and stays after
// an abort until the abort ends.
func TestControllerFollowsTheWaves(t *testing.T) {
	const img = "registry.internal.example/gpufleet/gpufleet-controller:"
	for _, tc := range []struct {
		promotion string
		want      map[string]string
	}{
		{`stable = "r1"`, map[string]string{"stg": "v0.9.0", "old": "v0.9.0", "prod-a": "v0.9.0"}},
		{`stable = "r1"` + "\n" + `rollout = { release = "r2", wave = "staging", stage = "canary" }`, map[string]string{"stg": "v0.10.0", "old": "v0.9.0", "prod-a": "v0.9.0"}},
		{`stable = "r1"` + "\n" + `rollout = { release = "r2", wave = "staging" }`, map[string]string{"stg": "v0.10.0", "old": "v0.10.0", "prod-a": "v0.9.0"}},
		{`stable = "r1"` + "\n" + `rollout = { release = "r2", wave = "staging", aborted = true }`, map[string]string{"stg": "v0.10.0", "old": "v0.10.0", "prod-a": "v0.9.0"}},
		{`stable = "r2"`, map[string]string{"stg": "v0.10.0", "old": "v0.10.0", "prod-a": "v0.10.0"}},
	} {
		src := strings.Replace(controllerFleet(t), `stable = "r1"`, tc.promotion, 1)
		f := parseFleet(t, src)
		for cluster, v := range tc.want {
			if got := controllerImageIn(t, controllerInstall(t, f, cluster)); got != img+v {
				t.Errorf("[promotion] %s: %s runs %s, want %s", tc.promotion, cluster, got, img+v)
			}
		}
	}
}

func TestNoControllerVersionNoInstall(t *testing.T) {
	src := strings.NewReplacer(`controller = "v0.9.0"`, "", `controller = "v0.10.0"`, "",
		"[controller]\nimage = \"registry.internal.example/gpufleet/gpufleet-controller\"", "").Replace(controllerFleet(t))
	if objs := controllerInstall(t, parseFleet(t, src), "stg"); objs != nil {
		t.Errorf("a fleet naming no controller version installs one: %v", keys(objs))
	}
}

func TestControllerManifestsModeHealthCheck(t *testing.T) {
	f := parseFleet(t, controllerFleet(t))
	refs := operatorHealthChecks(planFor(f, f.Clusters["stg"]))
	found := false
	for _, r := range refs {
		found = found || (r.Kind == "Deployment" && r.Name == "gpufleet-controller" && r.Namespace == "gpufleet-system")
	}
	if !found {
		t.Errorf("the operators step's health checks %v miss the controller's Deployment", refs)
	}
}

// TestControllerImageDigest: an image pinned by digest, in [controller]
// image or in a release's version, is what the Deployment runs, written as
// the fleet file says it; the version label is the version alone (a label
// value holds no "@").
func TestControllerImageDigest(t *testing.T) {
	const repo = "registry.internal.example/gpufleet/gpufleet-controller"
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name string
		edit *strings.Replacer
		want string
	}{
		{"each release's build", strings.NewReplacer(`controller = "v0.9.0"`, `controller = "v0.9.0@`+digest+`"`),
			repo + ":v0.9.0@" + digest},
		{"one pinned image", strings.NewReplacer(`controller = "v0.10.0"`, `controller = "v0.9.0"`,
			`image = "`+repo+`"`, `image = "`+repo+`:v0.9.0@`+digest+`"`),
			repo + ":v0.9.0@" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parseFleet(t, tc.edit.Replace(controllerFleet(t)))
			objs := controllerInstall(t, f, "stg")
			if got := controllerImageIn(t, objs); got != tc.want {
				t.Errorf("image %q, want %q", got, tc.want)
			}
			if got := ControllerImage(f, "stg"); got != tc.want {
				t.Errorf("ControllerImage = %q, want %q", got, tc.want)
			}
			dep := objs["Deployment/gpufleet-controller"]
			depLabels := dep["metadata"].(map[string]any)["labels"].(map[string]any)
			podLabels := dep["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
			if depLabels[LabelVersion] != "v0.9.0" || podLabels[LabelVersion] != "v0.9.0" {
				t.Errorf("version labels %v and %v, want v0.9.0", depLabels[LabelVersion], podLabels[LabelVersion])
			}
		})
	}
}
