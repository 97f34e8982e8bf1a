package render

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

const adoptedFleet = "testdata/adopted/fleet.toml"

// goldenCharts stands in for the operator charts in the manifests mode. It
// writes what the golden files must show — the release name, namespace and
// values render hands each chart — naming the operator's Deployment as the
// real charts do (the GPU Operator's is gpu-operator whatever the release,
// the Network Operator's follows its fullname helper), and for the GPU
// Operator a ClusterPolicy whose spec.driver.useNvidiaDriverCRD is the
// value driver.nvidiaDriverCRD.enabled, as the real template writes it
// (the switch guard reads it back).
type goldenCharts struct{}

func (goldenCharts) RenderChart(chart, version, release, namespace string, values map[string]any) ([]byte, error) {
	v, err := jsonMarshal(values)
	if err != nil {
		return nil, err
	}
	deployment := helmFullname(release, chart)
	if chart == GPUOperatorChart {
		deployment = GPUOperatorChart
	}
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": release + "-values", "namespace": namespace},
			"data": map[string]any{"chart": chart, "version": version, "release": release, "values": string(v)}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": deployment, "namespace": namespace, "labels": map[string]any{"app.kubernetes.io/instance": release}}},
	}
	if chart == GPUOperatorChart {
		driver, _ := values["driver"].(map[string]any)
		crd, _ := driver["nvidiaDriverCRD"].(map[string]any)
		spec := map[string]any{"useNvidiaDriverCRD": crd["enabled"] == true}
		if up, ok := driver["upgradePolicy"]; ok {
			spec["upgradePolicy"] = up
		}
		if ver, ok := driver["version"]; ok {
			spec["version"] = ver
		}
		objs = append(objs, map[string]any{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "cluster-policy"}, "spec": map[string]any{"driver": spec}})
	}
	var out []byte
	for i, o := range objs {
		b, err := encodeObject(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// adoptedFleetAs is testdata/adopted/fleet.toml in chart mode mode,
// with edits applied (old, new pairs).
func adoptedFleetAs(t *testing.T, mode string, edits ...string) *fleet.Fleet {
	t.Helper()
	src := string(mustReadFile(t, adoptedFleet))
	if mode == fleet.ModeManifests {
		edits = append(edits, "[charts]\n", "[charts]\nmode = \"manifests\"\n")
	}
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(src, edits[i]) {
			t.Fatalf("the adopted fleet has no %q", edits[i])
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// rolloutToStaging starts r2 on the staging wave (cluster cp).
var rolloutToStaging = []string{`stable = "r1"`, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }"}

// TestGoldenAdopted renders the adopted fleet in both chart modes, at rest
// and with r2 (no Network Operator) rolling out to cp, and compares it with
// testdata/adopted/golden; `go test ./internal/render -run
// TestGoldenAdopted -update` regenerates it.
func TestGoldenAdopted(t *testing.T) {
	for _, mode := range []string{fleet.ModeHelmRelease, fleet.ModeManifests} {
		for _, state := range []string{"rest", "rollout"} {
			t.Run(mode+"-"+state, func(t *testing.T) {
				var edits []string
				if state == "rollout" {
					edits = rolloutToStaging
				}
				out, err := RenderWith(adoptedFleetAs(t, mode, edits...), Options{Charts: goldenCharts{}})
				if err != nil {
					t.Fatal(err)
				}
				matchGolden(t, out, filepath.Join("testdata", "adopted", "golden", mode+"-"+state))
				for _, c := range []string{"cp", "nd"} {
					for _, step := range []string{stepOperators, stepConfig, stepLifecycle} {
						kustomizeBuild(t, out, "clusters/"+c+"/"+step)
					}
				}
			})
		}
	}
}

// kustomizeBuild builds a folder of out as Flux's kustomize-controller
// does, failing the test when kustomize refuses it; it returns the number
// of objects.
func kustomizeBuild(t *testing.T, out *Output, dir string) int {
	t.Helper()
	return len(kustomizeObjects(t, out, dir))
}

func helmRelease(t *testing.T, out *Output, p string) *helmv2.HelmRelease {
	t.Helper()
	b, ok := out.Files[p]
	if !ok {
		t.Fatalf("no %s", p)
	}
	var hr helmv2.HelmRelease
	if err := yaml.Unmarshal(b, &hr); err != nil {
		t.Fatal(err)
	}
	return &hr
}

func helmValues(t *testing.T, hr *helmv2.HelmRelease) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal(hr.Spec.Values.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// TestAdoptedHelmReleases: in the helmrelease mode an adopted install's
// HelmRelease lives in the namespace it was found in and names its release
// (spec.releaseName), the object keeping the chart's name; a cluster whose
// driver stays with the ClusterPolicy keeps the operator in that mode at the
// release's driver, with the operator's automatic upgrade off at rest, and
// gets no NVIDIADriver (an empty config folder that kustomize builds); the
// namespaces of adopted installs are never pruned.
func TestAdoptedHelmReleases(t *testing.T) {
	f := adoptedFleetAs(t, fleet.ModeHelmRelease)
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	cp := helmRelease(t, out, "clusters/cp/operators/helmrelease-gpu-operator.yaml")
	if cp.Name != "gpu-operator" || cp.Namespace != "nvidia-gpu-operator" || cp.Spec.ReleaseName != "gpu-operator-1712345678" {
		t.Errorf("cp's GPU Operator HelmRelease %s/%s releaseName %q", cp.Namespace, cp.Name, cp.Spec.ReleaseName)
	}
	v := helmValues(t, cp)
	if dig(v, "driver", "nvidiaDriverCRD", "enabled") != false || dig(v, "driver", "version") != "570.172.08" || dig(v, "driver", "usePrecompiled") != nil {
		t.Errorf("cp's values %v: want ClusterPolicy mode at driver 570.172.08", v["driver"])
	}
	if dig(v, "driver", "upgradePolicy", "autoUpgrade") != false || dig(v, "driver", "upgradePolicy", "maxParallelUpgrades") != float64(2) {
		t.Errorf("cp's upgrade policy %v: want the policy's numbers with autoUpgrade off at rest", dig(v, "driver", "upgradePolicy"))
	}
	if net := helmRelease(t, out, "clusters/cp/operators/helmrelease-network-operator.yaml"); net.Namespace != NetworkOperatorNamespace || net.Spec.ReleaseName != "" {
		t.Errorf("cp's Network Operator (no table): %s releaseName %q, want the defaults", net.Namespace, net.Spec.ReleaseName)
	}
	if cfg := slices.Sorted(slices.Values(configFiles(out, "cp"))); !slices.Equal(cfg, []string{"clusters/cp/config/configmap-gpufleet-driver-management.yaml", "clusters/cp/config/kustomization.yaml"}) {
		t.Errorf("cp's config step %v: want no NVIDIADriver in ClusterPolicy mode, the record of it alone", cfg)
	}
	if n := kustomizeBuild(t, out, "clusters/cp/config"); n != 1 {
		t.Errorf("cp's config step builds %d objects, want 1", n)
	}
	if tgt, err := TargetFor(f, "cp"); err != nil || len(tgt.NVIDIADrivers) != 0 || tgt.Release.Name != "r1" {
		t.Errorf("TargetFor(cp): %v %v, want no NVIDIADriver", tgt.NVIDIADrivers, err)
	}
	var ns corev1.Namespace
	if err := yaml.Unmarshal(out.Files["clusters/cp/operators/namespace-nvidia-gpu-operator.yaml"], &ns); err != nil || ns.Annotations[kustomizePrune] != kustomizePruneDisabled {
		t.Errorf("the adopted namespace must not be pruned: %v %v", ns.Annotations, err)
	}
	var netNS corev1.Namespace
	if err := yaml.Unmarshal(out.Files["clusters/cp/operators/namespace-"+NetworkOperatorNamespace+".yaml"], &netNS); err != nil || len(netNS.Annotations) != 0 {
		t.Errorf("a namespace gpufleet installs into is Flux's to prune: %v %v", netNS.Annotations, err)
	}

	nd := helmRelease(t, out, "clusters/nd/operators/helmrelease-gpu-operator.yaml")
	if nd.Namespace != GPUOperatorNamespace || nd.Spec.ReleaseName != "gpu-op" || dig(helmValues(t, nd), "driver", "nvidiaDriverCRD", "enabled") != true {
		t.Errorf("nd's GPU Operator: %s releaseName %q values %v", nd.Namespace, nd.Spec.ReleaseName, helmValues(t, nd)["driver"])
	}
	if net := helmRelease(t, out, "clusters/nd/operators/helmrelease-network-operator.yaml"); net.Name != "network-operator" || net.Namespace != "nvidia-net" || net.Spec.ReleaseName != "net-op" {
		t.Errorf("nd's Network Operator: %s/%s releaseName %q", net.Namespace, net.Name, net.Spec.ReleaseName)
	}
	if _, ok := out.Files["clusters/nd/config/nvidiadriver-a100-570-172-08.yaml"]; !ok {
		t.Errorf("nd manages drivers by NVIDIADriver: config %v", configFiles(out, "nd"))
	}
	if tgt, err := TargetFor(f, "nd"); err != nil || !slices.Equal(tgt.NVIDIADrivers, []string{"a100-570-172-08"}) {
		t.Errorf("TargetFor(nd): %v %v", tgt.NVIDIADrivers, err)
	}
	want := []Operator{
		{Chart: "gpu-operator", Version: "v25.3.4", Release: "gpu-op", Namespace: "gpu-operator", Deployment: "gpu-operator", Adopted: true},
		{Chart: "network-operator", Version: "v25.4.0", Release: "net-op", Namespace: "nvidia-net", Deployment: "net-op-network-operator", Adopted: true},
	}
	if diff := cmp.Diff(want, Operators(f, "nd")); diff != "" {
		t.Errorf("Operators(nd) (-want +got):\n%s", diff)
	}
}

// TestAdoptedRolloutWithoutNetworkOperator: a rollout moves a
// ClusterPolicy-managed cluster's driver in place (driver.version) with the
// operator's automatic upgrade on, and a release without a Network Operator
// writes none: no HelmRelease, no namespace, nothing in the manifests.
func TestAdoptedRolloutWithoutNetworkOperator(t *testing.T) {
	for _, mode := range []string{fleet.ModeHelmRelease, fleet.ModeManifests} {
		t.Run(mode, func(t *testing.T) {
			f := adoptedFleetAs(t, mode, rolloutToStaging...)
			out, err := RenderWith(f, Options{Charts: goldenCharts{}})
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, p := range out.Paths() {
				if after, ok := strings.CutPrefix(p, "clusters/cp/operators/"); ok {
					ops = append(ops, after)
					if strings.Contains(string(out.Files[p]), "network-operator") {
						t.Errorf("%s mentions the Network Operator, which r2 has not", p)
					}
				}
			}
			wantOps := []string{"helmrelease-gpu-operator.yaml", "helmrepository.yaml", "kustomization.yaml", "namespace-nvidia-gpu-operator.yaml"}
			if mode == fleet.ModeManifests {
				wantOps = []string{"gpu-operator-v25.10.1.yaml", "kustomization.yaml", "namespace-nvidia-gpu-operator.yaml"}
			}
			if diff := cmp.Diff(wantOps, ops); diff != "" {
				t.Errorf("cp's operators folder (-want +got):\n%s", diff)
			}
			if len(Operators(f, "cp")) != 1 {
				t.Errorf("Operators(cp) %v, want the GPU Operator alone", Operators(f, "cp"))
			}
			var k kustomizev1.Kustomization
			if err := yaml.Unmarshal(out.Files["clusters/cp/flux-operators.yaml"], &k); err != nil {
				t.Fatal(err)
			}
			if mode == fleet.ModeManifests {
				if len(k.Spec.HealthChecks) != 1 || k.Spec.HealthChecks[0].Namespace != "nvidia-gpu-operator" || k.Spec.HealthChecks[0].Name != "gpu-operator" {
					t.Errorf("cp's health checks %v, want its GPU Operator's Deployment alone", k.Spec.HealthChecks)
				}
				return
			}
			v := helmValues(t, helmRelease(t, out, "clusters/cp/operators/helmrelease-gpu-operator.yaml"))
			if dig(v, "driver", "version") != "580.95.05" || dig(v, "driver", "upgradePolicy", "autoUpgrade") != true || dig(v, "driver", "nvidiaDriverCRD", "enabled") != false {
				t.Errorf("cp rolling out r2: %v", v["driver"])
			}
		})
	}
}

// TestAdoptedManifestsHealthChecks: in the manifests mode the operators
// step waits for each operator's Deployment where the cluster's install
// runs it, under the name its chart gives it for the release.
func TestAdoptedManifestsHealthChecks(t *testing.T) {
	out, err := RenderWith(adoptedFleetAs(t, fleet.ModeManifests), Options{Charts: goldenCharts{}})
	if err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string][]string{
		"cp": {"Deployment/nvidia-gpu-operator/gpu-operator", "Deployment/nvidia-network-operator/network-operator"},
		"nd": {"Deployment/gpu-operator/gpu-operator", "Deployment/nvidia-net/net-op-network-operator"},
	} {
		var k kustomizev1.Kustomization
		if err := yaml.Unmarshal(out.Files["clusters/"+cluster+"/flux-operators.yaml"], &k); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, hc := range k.Spec.HealthChecks {
			got = append(got, hc.Kind+"/"+hc.Namespace+"/"+hc.Name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s health checks (-want +got):\n%s", cluster, diff)
		}
		// The stand-in writes each Deployment where and as the chart does:
		// the health checks must name objects the step applies.
		for _, hc := range k.Spec.HealthChecks {
			found := false
			for p, b := range out.Files {
				if strings.HasPrefix(p, "clusters/"+cluster+"/operators/") && strings.Contains(string(b), "kind: Deployment\nmetadata:\n  labels:\n    app.kubernetes.io/instance: ") &&
					strings.Contains(string(b), "  name: "+hc.Name+"\n  namespace: "+hc.Namespace+"\n") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no Deployment %s/%s in the operators folder", cluster, hc.Namespace, hc.Name)
			}
		}
	}
}

// TestOperatorsOfAnUnadoptedCluster: without the tables every install is
// the default one gpufleet has always rendered.
func TestOperatorsOfAnUnadoptedCluster(t *testing.T) {
	f, err := fleet.Load(exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	want := []Operator{
		{Chart: "gpu-operator", Version: "v25.3.4", Release: "gpu-operator", Namespace: GPUOperatorNamespace, Deployment: "gpu-operator"},
		{Chart: "network-operator", Version: "v25.4.0", Release: "network-operator", Namespace: NetworkOperatorNamespace, Deployment: "network-operator"},
	}
	if diff := cmp.Diff(want, Operators(f, "stg-h100")); diff != "" {
		t.Errorf("Operators (-want +got):\n%s", diff)
	}
	if Operators(f, "nope") != nil {
		t.Error("Operators of an unknown cluster")
	}
}

func TestHelmFullname(t *testing.T) {
	for release, want := range map[string]string{
		"network-operator":      "network-operator",
		"net-op":                "net-op-network-operator",
		"my-network-operator-2": "my-network-operator-2",
		strings.Repeat("b", 47): strings.Repeat("b", 47) + "-network-operato",
		strings.Repeat("c", 54): strings.Repeat("c", 54) + "-network",
	} {
		if got := helmFullname(release, "network-operator"); got != want {
			t.Errorf("helmFullname(%q) = %q, want %q", release, got, want)
		}
	}
}
