package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	rspb "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/adopt"
	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// The versions the clusters of TestInitOnLiveClusters run.
const (
	initGPUOperator     = "v25.3.4"
	initNetworkOperator = "v25.4.0"
	initDriver          = "570.172.08"
	// initMirror is prod-a100's own driver image repository (a value of
	// its Helm release).
	initMirror = "registry.example.com/nvidia"
)

// installOperator installs chart at version as Helm release in namespace
// the way `helm install` leaves it, as far as init reads it: the chart is
// rendered by Helm's engine from ../shared/operators with the release's
// name and values, its Deployments (and, for the GPU Operator, its
// ClusterPolicy) are created with Helm's release annotations, and Helm's
// own storage driver records the release (its values) in a Secret as
// `helm install` does. No operator process runs: init reads objects, not
// what the operator does.
func installOperator(t *testing.T, cl *testbed.Cluster, ops, chartName, version, release, namespace string, values map[string]any) {
	t.Helper()
	ctx := t.Context()
	c := cl.Client
	objs, err := charts.ManifestObjects(ctx, &charts.FolderSource{Dir: ops}, chartName, version, values, charts.RenderOptions{ReleaseName: release, Namespace: namespace})
	if err != nil {
		t.Fatalf("render %s %s: %v", chartName, version, err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	created := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment", "ClusterPolicy":
		default:
			continue
		}
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[adopt.AnnotationReleaseName], ann[adopt.AnnotationReleaseNamespace] = release, namespace
		o.SetAnnotations(ann)
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		created++
	}
	if created == 0 {
		t.Fatalf("the %s chart rendered no Deployment", chartName)
	}
	cs, err := kubernetes.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	rel := &rspb.Release{Name: release, Namespace: namespace, Version: 1, Config: values,
		Info:  &rspb.Info{Status: rspb.StatusDeployed, Description: "Install complete"},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: chartName, Version: version, APIVersion: "v2"}}}
	if err := driver.NewSecrets(cs.CoreV1().Secrets(namespace)).Create(fmt.Sprintf("sh.helm.release.v1.%s.v1", release), rel); err != nil {
		t.Fatalf("record Helm release %s: %v", release, err)
	}
}

// valueAt is the value at keys in chart values, nil when there is none.
func valueAt(v map[string]any, keys ...string) any {
	var at any = v
	for _, k := range keys {
		m, ok := at.(map[string]any)
		if !ok {
			return nil
		}
		at = m[k]
	}
	return at
}

// gpuNodeLabels are the labels GPU Feature Discovery and the GPU Operator
// put on a node with a loaded driver.
func gpuNodeLabels(product, driver string) map[string]string {
	major, _, _ := strings.Cut(driver, ".")
	return map[string]string{
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.product":                      product,
		"nvidia.com/gpu.count":                        "8",
		"nvidia.com/gpu.family":                       "hopper",
		"nvidia.com/cuda.driver-version.full":         driver,
		"nvidia.com/cuda.driver-version.major":        major,
		"nvidia.com/mig.capable":                      "true",
		"nvidia.com/mig.config":                       "all-disabled",
		"nvidia.com/mig.config.state":                 "success",
		"nvidia.com/gpu.deploy.driver":                "true",
		"nvidia.com/gpu-driver-upgrade-state":         "upgrade-done",
		"feature.node.kubernetes.io/pci-10de.present": "true",
	}
}

func createNode(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
}

func labelNode(t *testing.T, c client.Client, name string, set map[string]string, remove ...string) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	maps.Copy(n.Labels, set)
	for _, k := range remove {
		delete(n.Labels, k)
	}
	if err := c.Update(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
}

// TestInitOnLiveClusters runs `gpufleet init` against two real API
// servers arranged as a platform team runs its fleet before gpufleet: the
// GPU Operator installed by Helm from its v25.3.4 chart in the chart's
// default mode (the ClusterPolicy manages the driver), one of them under a
// generated release name; the Network Operator v25.4.0; GPU nodes labelled
// as GPU Feature Discovery and the operator label them (an H100 pool; an
// A100 pool and an A100 MIG pool); a CPU node; no gpufleet label anywhere.
// It checks the fleet file written (golden), that it parses, renders,
// validates against the real charts and lints clean, the refusal to
// overwrite, --dry-run, -o json against the schema, and the refusals with
// their node names.
func TestInitOnLiveClusters(t *testing.T) {
	ops := sharedtest.Operators(t)
	crds := filepath.Join(ops, "gpu-operator", initGPUOperator, "deployments", "gpu-operator", "crds")
	if _, err := os.Stat(crds); err != nil {
		t.Skipf("needs the GPU Operator %s CRDs in ../shared/operators: %v", initGPUOperator, err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{"prod-a100", "stg-h100"}, CRDDirs: []string{crds}})
	prod, stg := tb.Cluster("prod-a100").Client, tb.Cluster("stg-h100").Client
	// The team's own values: the operator's images pinned, its driver
	// pulled from a mirror on prod-a100, the driver version (gpufleet's to
	// set: left out of the fleet file, as what the nodes run).
	gpuValues := func(mirror bool) map[string]any {
		driver := map[string]any{"version": initDriver}
		if mirror {
			driver["repository"] = initMirror
		}
		return map[string]any{
			"operator":  map[string]any{"version": initGPUOperator},
			"validator": map[string]any{"version": initGPUOperator},
			"driver":    driver,
		}
	}
	installOperator(t, tb.Cluster("prod-a100"), ops, "gpu-operator", initGPUOperator, "gpu-operator-1712345678", "gpu-operator", gpuValues(true))
	installOperator(t, tb.Cluster("stg-h100"), ops, "gpu-operator", initGPUOperator, "gpu-operator", "gpu-operator", gpuValues(false))
	for _, name := range []string{"prod-a100", "stg-h100"} {
		installOperator(t, tb.Cluster(name), ops, "network-operator", initNetworkOperator, "network-operator", "nvidia-network-operator", nil)
	}
	// What the chart made of the mirror, which render must keep.
	var cp unstructured.Unstructured
	cp.SetAPIVersion("nvidia.com/v1")
	cp.SetKind("ClusterPolicy")
	if err := prod.Get(t.Context(), client.ObjectKey{Name: "cluster-policy"}, &cp); err != nil {
		t.Fatal(err)
	}
	if repo, _, _ := unstructured.NestedString(cp.Object, "spec", "driver", "repository"); repo != initMirror {
		t.Fatalf("the installed ClusterPolicy's driver repository is %q, want the mirror %s", repo, initMirror)
	}
	const a100 = "NVIDIA-A100-SXM4-80GB"
	mig := func(l map[string]string) map[string]string {
		l["nvidia.com/mig.config"] = "all-1g.10gb"
		return l
	}
	createNode(t, prod, "a100-1", gpuNodeLabels(a100, initDriver))
	createNode(t, prod, "a100-2", gpuNodeLabels(a100, initDriver))
	createNode(t, prod, "a100-mig-1", mig(gpuNodeLabels(a100, initDriver)))
	// Under MIG's single strategy GFD names the slice in the product.
	createNode(t, prod, "a100-mig-2", mig(gpuNodeLabels(a100+"-MIG-1g.10gb", initDriver)))
	createNode(t, prod, "cpu-1", map[string]string{"kubernetes.io/os": "linux"})
	createNode(t, stg, "h100-1", gpuNodeLabels("NVIDIA-H100-80GB-HBM3", initDriver))
	createNode(t, stg, "h100-2", gpuNodeLabels("NVIDIA-H100-80GB-HBM3", initDriver))

	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.toml")
	golden := filepath.Join("testdata", "golden", "init-fleet.toml")
	base := []string{"init", "--kubeconfig", tb.Kubeconfig}

	t.Run("writes the fleet file", func(t *testing.T) {
		code, out, errOut := run(t, append(base, "-f", fleetFile)...)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, s := range []string{"read 2 clusters: prod-a100, stg-h100", "a100 (2), a100-mig (2)", "v25.3.4 gpu-operator/gpu-operator-1712345678", "clusterpolicy",
			"release gpuop-v25-3-4-netop-v25-4-0-drv-570-172-08 (stable)", "waves: staging [stg-h100] → prod [prod-a100] on approval", "wrote " + fleetFile} {
			if !strings.Contains(out, s) {
				t.Errorf("the summary does not say %q:\n%s", s, out)
			}
		}
		if errOut != "" {
			t.Errorf("stderr: %s", errOut)
		}
		got, err := os.ReadFile(fleetFile)
		if err != nil {
			t.Fatal(err)
		}
		if *updateGolden {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if want, err := os.ReadFile(golden); err != nil || string(want) != string(got) {
			t.Errorf("the fleet file differs from %s (go test -run TestInitOnLiveClusters -update rewrites it): %v\n%s", golden, err, got)
		}
		f, err := fleet.Load(fleetFile)
		if err != nil {
			t.Fatalf("the fleet file init wrote does not parse: %v", err)
		}
		if c := f.Clusters["prod-a100"]; c.GPUOperatorRelease() != "gpu-operator-1712345678" || c.DriverManagement() != fleet.DriverManagementClusterPolicy {
			t.Errorf("prod-a100's GPU Operator: release %q, driver management %q", c.GPUOperatorRelease(), c.DriverManagement())
		}
		// What a person does next: render, validate against the real
		// charts, lint.
		outDir := filepath.Join(dir, "out")
		if code, out, errOut := run(t, "render", "-f", fleetFile, "--output-dir", outDir); code != ExitOK {
			t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
		}
		if v := f.Clusters["prod-a100"].GPUOperatorValues(); valueAt(v, "driver", "repository") != initMirror || valueAt(v, "operator", "version") != initGPUOperator || valueAt(v, "driver", "version") != nil {
			t.Errorf("prod-a100's values in the fleet file %v: want the release's own (the mirror, the operator's version), not driver.version", v)
		}
		hr, err := os.ReadFile(filepath.Join(outDir, "clusters", "prod-a100", "operators", "helmrelease-gpu-operator.yaml"))
		if err != nil || !strings.Contains(string(hr), "repository: "+initMirror) {
			t.Errorf("render dropped prod-a100's driver mirror from its HelmRelease (%v):\n%s", err, hr)
		}
		if code, out, errOut := run(t, "validate", "-f", fleetFile, "--charts", ops); code != ExitOK {
			t.Errorf("validate: exit %d\n%s%s", code, out, errOut)
		}
		if code, out, errOut := run(t, "lint", outDir); code != ExitOK {
			t.Errorf("lint: exit %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("an existing fleet file is left alone; --force replaces it", func(t *testing.T) {
		before, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fleetFile, []byte("# edited\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, append(base, "-f", fleetFile)...)
		if code != ExitFailed || !strings.Contains(errOut, "exists") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if b, _ := os.ReadFile(fleetFile); string(b) != "# edited\n" {
			t.Error("init changed an existing fleet file")
		}
		if code, _, errOut := run(t, append(base, "-f", fleetFile, "--force")...); code != ExitOK {
			t.Fatalf("--force: exit %d: %s", code, errOut)
		}
		if after, _ := os.ReadFile(fleetFile); string(after) != string(before) {
			t.Errorf("--force wrote another file than %s", golden)
		}
	})

	t.Run("--dry-run prints the file and writes nothing", func(t *testing.T) {
		other := filepath.Join(dir, "other.toml")
		code, out, errOut := run(t, append(base, "-f", other, "--dry-run")...)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if want, _ := os.ReadFile(golden); out != string(want) {
			t.Errorf("--dry-run printed another file:\n%s", out)
		}
		if !strings.Contains(errOut, "read 2 clusters") {
			t.Errorf("no summary on stderr: %s", errOut)
		}
		if _, err := os.Stat(other); err == nil {
			t.Error("--dry-run wrote the file")
		}
	})

	t.Run("-o json", func(t *testing.T) {
		code, out, errOut := run(t, append(base, "-f", fleetFile, "--dry-run", "-o", "json")...)
		if code != ExitOK {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		checkSchema(t, "InitReport", []byte(out))
		got := normalize(out, dir)
		golden := filepath.Join("testdata", "golden", "init.json")
		if *updateGolden {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if want, err := os.ReadFile(golden); err != nil || string(want) != got {
			t.Errorf("differs from %s: %v\n%s", golden, err, got)
		}
	})

	t.Run("the adoption of docs/adoption.md, as written", func(t *testing.T) {
		for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
			t.Setenv(k, v)
		}
		t.Setenv("KUBECONFIG", tb.Kubeconfig)
		repo := t.TempDir()
		lines := docBlock(t, "docs/adoption.md", "## Step by step")
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(repo)
		for _, line := range lines {
			cmdline, _, _ := strings.Cut(line, "  #")
			args := strings.Fields(cmdline)
			if len(args) == 0 {
				continue
			}
			if args[0] != "gpufleet" {
				if out, err := exec.Command("sh", "-c", cmdline).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", cmdline, err, out)
				}
				continue
			}
			if args[1] == "validate" {
				// Offline: the charts of ../shared/operators, not NVIDIA's
				// repository.
				args = append(args, "--charts", ops)
			}
			if code, out, errOut := run(t, args[1:]...); code != ExitOK {
				t.Fatalf("%s: exit %d\n%s%s", strings.TrimSpace(cmdline), code, out, errOut)
			}
		}
		if got, err := os.ReadFile(filepath.Join(repo, "fleet.toml")); err != nil || string(got) != string(want) {
			t.Errorf("the documented init wrote another fleet file than %s: %v", golden, err)
		}
		if _, err := os.Stat(filepath.Join(repo, "clusters", "prod-a100", "flux-operators.yaml")); err != nil {
			t.Errorf("the documented render wrote no cluster folder: %v", err)
		}
	})

	t.Run("a release whose values init may not read: refused, saying what to grant; --values, or the grant, writes the file", func(t *testing.T) {
		// init as a user that may read all it reads but Secrets.
		const user = "gpufleet-init"
		for _, name := range []string{"prod-a100", "stg-h100"} {
			grantInitReads(t, tb.Cluster(name).Client, user)
		}
		limited := impersonating(t, tb.Kubeconfig, user)
		code, out, errOut := run(t, "init", "--kubeconfig", limited, "-f", filepath.Join(dir, "limited.toml"), "--dry-run")
		if code != ExitFailed {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
		}
		for _, want := range []string{
			"init refused, nothing written (4 problems)",
			"prod-a100: cannot read the values of Helm release gpu-operator-1712345678 (the gpu-operator chart, namespace gpu-operator): init may not list the Secrets of namespace gpu-operator",
			"kubectl --context prod-a100 -n gpu-operator create role gpufleet-init-helm --verb=list --resource=secrets",
			"helm --kube-context stg-h100 get values network-operator -n nvidia-network-operator -o yaml > stg-h100.network-operator.yaml; gpufleet init --values stg-h100/network-operator=stg-h100.network-operator.yaml",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errOut)
			}
		}

		// By hand: the values helm get values prints.
		args := []string{"init", "--kubeconfig", limited, "-f", filepath.Join(dir, "by-hand.toml"), "--dry-run"}
		for ctx, mirror := range map[string]bool{"prod-a100": true, "stg-h100": false} {
			b, err := yaml.Marshal(gpuValues(mirror))
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, "--values", ctx+"/gpu-operator="+writeFile(t, string(b)), "--values", ctx+"/network-operator="+writeFile(t, ""))
		}
		code, out, errOut = run(t, args...)
		if code != ExitOK || !strings.Contains(out, "repository: "+initMirror) || !strings.Contains(out, "given with --values") {
			t.Errorf("with --values: exit %d\n%s%s", code, out, errOut)
		}

		// The grant the refusal names, in each release's namespace: then
		// init writes what an admin's init writes.
		for _, name := range []string{"prod-a100", "stg-h100"} {
			for _, ns := range []string{"gpu-operator", "nvidia-network-operator"} {
				grantSecretsList(t, tb.Cluster(name).Client, ns, user)
			}
		}
		code, out, errOut = run(t, "init", "--kubeconfig", limited, "-f", filepath.Join(dir, "granted.toml"), "--dry-run")
		if want, _ := os.ReadFile(golden); code != ExitOK || out != string(want) {
			t.Errorf("after the grant: exit %d, stderr %s; the fleet file differs from %s:\n%s", code, errOut, golden, out)
		}
	})

	t.Run("GPU DRA nodes: a pool read from their ResourceSlices; a pool of both kinds refused", func(t *testing.T) {
		// An H200 pool whose GPUs NVIDIA's DRA driver hands out: one node
		// without any label of GPU Feature Discovery's, one with them.
		createNode(t, stg, "h200-1", map[string]string{"kubernetes.io/os": "linux"})
		createNode(t, stg, "h200-2", gpuNodeLabels("NVIDIA-H200", initDriver))
		createSlice(t, stg, "h200-1", "NVIDIA H200", "570.172.8")
		createSlice(t, stg, "h200-2", "NVIDIA H200", "570.172.8")
		code, out, errOut := run(t, append(base, "--context", "stg-h100", "-f", filepath.Join(dir, "dra.toml"), "--dry-run", "-o", "json")...)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		checkSchema(t, "InitReport", []byte(out))
		var rep InitReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		want := []*adopt.Pool{
			{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Driver: initDriver, Nodes: []string{"h100-1", "h100-2"}},
			{Name: "h200", Product: "NVIDIA-H200", Driver: initDriver, DRA: true, Nodes: []string{"h200-1", "h200-2"}},
		}
		if len(rep.Clusters) != 1 || !cmp.Equal(want, rep.Clusters[0].Pools) {
			t.Fatalf("pools: %s", cmp.Diff(want, rep.Clusters))
		}
		// h200-1 is in its pool by its slices alone: what selects a pool's
		// nodes needs GFD's product label, which init says how to set.
		if len(rep.Warnings) != 1 || rep.Warnings[0].Reason != adopt.ReasonProductLabelNeeded ||
			!strings.Contains(rep.Warnings[0].Message, "kubectl --context stg-h100 label node h200-1 nvidia.com/gpu.product=NVIDIA-H200") {
			t.Errorf("warnings: %+v", rep.Warnings)
		}

		// The device plugin offers h100-1's GPUs, DRA h100-2's.
		var n corev1.Node
		if err := stg.Get(t.Context(), client.ObjectKey{Name: "h100-1"}, &n); err != nil {
			t.Fatal(err)
		}
		n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
		if err := stg.Status().Update(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		createSlice(t, stg, "h100-2", "NVIDIA H100 80GB HBM3", "570.172.8")
		code, out, errOut = run(t, append(base, "--context", "stg-h100", "-f", filepath.Join(dir, "dra.toml"), "--dry-run")...)
		if code != ExitFailed {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
		}
		for _, s := range []string{
			"stg-h100: pool h100 mixes nodes whose GPUs the device plugin offers (allocatable nvidia.com/gpu: h100-1) with nodes whose GPUs DRA hands out (ResourceSlices of gpu.nvidia.com: h100-2)",
			"not supported yet",
			"kubectl --context stg-h100 label node --overwrite h100-1 gpufleet.io/pool=h100; kubectl --context stg-h100 label node --overwrite h100-2 gpufleet.io/pool=h100-dra",
		} {
			if !strings.Contains(errOut, s) {
				t.Errorf("stderr does not say %q:\n%s", s, errOut)
			}
		}

		// Split as the message says, the two kinds are two pools.
		labelNode(t, stg, "h100-1", map[string]string{"gpufleet.io/pool": "h100"})
		labelNode(t, stg, "h100-2", map[string]string{"gpufleet.io/pool": "h100-dra"})
		if code, out, errOut = run(t, append(base, "--context", "stg-h100", "-f", filepath.Join(dir, "dra.toml"), "--dry-run")...); code != ExitOK ||
			!strings.Contains(out, `name = "h100-dra"`) {
			t.Errorf("after the split: exit %d\n%s%s", code, out, errOut)
		}

		// Leave stg-h100 as it was.
		for _, name := range []string{"h200-1", "h200-2", "h100-2"} {
			if err := stg.Delete(t.Context(), &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu.nvidia.com"}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"h200-1", "h200-2"} {
			if err := stg.Delete(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
		labelNode(t, stg, "h100-1", nil, "gpufleet.io/pool")
		labelNode(t, stg, "h100-2", nil, "gpufleet.io/pool")
	})

	t.Run("refuses to guess, naming the nodes", func(t *testing.T) {
		labelNode(t, prod, "a100-2", map[string]string{"nvidia.com/cuda.driver-version.full": "570.124.06"})
		labelNode(t, stg, "h100-2", map[string]string{"nvidia.com/gpu-driver-upgrade-state": "drain-required"})
		host := gpuNodeLabels("NVIDIA-H100-80GB-HBM3", initDriver)
		host["nvidia.com/gpu.deploy.driver"] = "pre-installed"
		createNode(t, stg, "h100-host", host)
		// A GPU node whose driver is not loaded: the operator's gpu.present,
		// nothing from GFD.
		createNode(t, prod, "a100-new", map[string]string{"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true"})
		refused := filepath.Join(dir, "refused.toml")
		code, out, errOut := run(t, append(base, "-f", refused)...)
		if code != ExitFailed {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
		}
		for _, s := range []string{
			"init refused, nothing written (5 problems)",
			"prod-a100: GPU node a100-new has no nvidia.com/gpu.product label",
			"prod-a100: the nodes of pool a100 run different drivers: 570.124.06 on a100-2; 570.172.08 on a100-1",
			"prod-a100: ClusterPolicy cluster-policy asks for driver 570.172.08, but node a100-2 runs 570.124.06",
			"stg-h100: node h100-host has a driver installed on the host (nvidia.com/gpu.deploy.driver=pre-installed)",
			"stg-h100: node h100-2 is in the middle of a GPU Operator driver upgrade (nvidia.com/gpu-driver-upgrade-state=drain-required)",
		} {
			if !strings.Contains(errOut, s) {
				t.Errorf("stderr does not say %q:\n%s", s, errOut)
			}
		}
		if _, err := os.Stat(refused); err == nil {
			t.Error("a refused init wrote the file")
		}
		code, out, _ = run(t, append(base, "-f", refused, "-o", "json")...)
		if code != ExitFailed {
			t.Fatalf("-o json: exit %d\n%s", code, out)
		}
		checkSchema(t, "InitReport", []byte(out))
		var rep InitReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range rep.Problems {
			got = append(got, p.Cluster+" "+string(p.Reason)+" "+strings.Join(p.Nodes, ","))
		}
		want := []string{
			"prod-a100 NodeWithoutProduct a100-new",
			"prod-a100 MixedDrivers a100-1,a100-2",
			"prod-a100 DriverNotRolledOut a100-2",
			"stg-h100 PreinstalledDriver h100-host",
			"stg-h100 UpgradeInProgress h100-2",
		}
		if !slices.Equal(got, want) || rep.Written {
			t.Errorf("problems %q, want %q (written %t)", got, want, rep.Written)
		}
		if _, err := os.Stat(refused); err == nil {
			t.Error("a refused init wrote the file")
		}
	})

	t.Run("a cluster without the GPU Operator's CRDs is read, not unreadable", func(t *testing.T) {
		ctx := t.Context()
		for _, name := range []string{"clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"} {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := stg.Delete(ctx, crd); err != nil {
				t.Fatal(err)
			}
			waitGone(ctx, t, stg, crd)
		}
		var deps unstructured.UnstructuredList
		deps.SetAPIVersion("apps/v1")
		deps.SetKind("DeploymentList")
		if err := stg.List(ctx, &deps, client.InNamespace("gpu-operator")); err != nil {
			t.Fatal(err)
		}
		for i := range deps.Items {
			if err := stg.Delete(ctx, &deps.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := run(t, append(base, "--context", "stg-h100", "-f", filepath.Join(dir, "x.toml"), "--dry-run")...)
		if code != ExitFailed || !strings.Contains(errOut, "stg-h100: no GPU Operator found") {
			t.Errorf("exit %d, want 1 naming the missing operator\n%s%s", code, out, errOut)
		}
	})
}

// createSlice creates the ResourceSlice NVIDIA's GPU DRA driver publishes
// for node: one GPU of product (as NVML names it) on driver version
// (semver).
func createSlice(t *testing.T, c client.Client, node, product, version string) {
	t.Helper()
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", NodeName: new(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"productName":   {StringValue: new(product)},
			"driverVersion": {VersionValue: new(version)},
		}}},
	}}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// grantInitReads lets user read what init reads of a cluster, Secrets
// and ConfigMaps aside: nodes, ResourceSlices, Deployments,
// ClusterPolicies, NVIDIADrivers.
func grantInitReads(t *testing.T, c client.Client, user string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list"}},
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"clusterpolicies", "nvidiadrivers"}, Verbs: []string{"list"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// grantSecretsList is what init's refusal asks for: kubectl create role
// gpufleet-init-helm --verb=list --resource=secrets, and its rolebinding.
func grantSecretsList(t *testing.T, c client.Client, namespace, user string) {
	t.Helper()
	const name = "gpufleet-init-helm"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// impersonating is a copy of kubeconfig whose users act as user (as
// kubectl --as does): the testbed's admin may impersonate.
func impersonating(t *testing.T, kubeconfig, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitGone waits until obj is not found (a deleted CRD goes once its
// objects are gone).
func waitGone(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there: %v", obj.GetName(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
