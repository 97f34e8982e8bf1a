package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/adopt"
)

// writeKubeconfig writes a kubeconfig whose contexts reach servers that do
// not answer (a closed port on the loopback): reading them fails at once.
func writeKubeconfig(t *testing.T, contexts ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: down\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: x\ncontexts:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + c + "\n  context:\n    cluster: down\n    user: u\n")
	}
	if len(contexts) == 0 {
		b.Reset()
		b.WriteString("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeFile writes text to a file of its own and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInitCommandLine: wrong command lines are exit 2 before any cluster
// is read; an existing fleet file is refused (exit 1) before any cluster
// is read; a cluster that cannot be read is exit 3, nothing written, and
// with -o json an Error document.
func TestInitCommandLine(t *testing.T) {
	kc := writeKubeconfig(t, "stg-1", "prod-1")
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.toml")
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown -o", []string{"-o", "xml"}, ExitUsage, "-o must be text, json or yaml"},
		{"a bad --environment", []string{"--environment", "stg-1"}, ExitUsage, "write CONTEXT=ENVIRONMENT"},
		{"a bad --wave", []string{"--wave", "=stg-1"}, ExitUsage, "write NAME=CONTEXT,CONTEXT"},
		{"a bad --chart-mode", []string{"--chart-mode", "helm"}, ExitUsage, "--chart-mode must be helmrelease or manifests"},
		{"a wave missing a context", []string{"--wave", "first=stg-1"}, ExitUsage, `context "prod-1" is in no --wave`},
		{"a wave named as a cluster", []string{"--wave", "stg-1=stg-1,prod-1"}, ExitUsage, "--wave stg-1 has the name of a cluster"},
		{"an environment of an unknown context", []string{"--environment", "x=prod"}, ExitUsage, `--environment names context "x", which init does not read`},
		{"a bad release name", []string{"--release", "R_1"}, ExitUsage, `--release "R_1" is not a valid release name`},
		{"an argument", []string{"extra"}, ExitUsage, "unknown command"},
		{"a bad --values", []string{"--values", "stg-1=x.yaml"}, ExitUsage, `--values "stg-1=x.yaml": write CONTEXT/CHART=FILE`},
		{"--values of another chart", []string{"--values", "stg-1/dcgm=x.yaml"}, ExitUsage, `the chart is gpu-operator or network-operator, not "dcgm"`},
		{"--values of a file that is not there", []string{"--values", "stg-1/gpu-operator=" + filepath.Join(dir, "none.yaml")}, ExitUsage, "--values stg-1/gpu-operator: open "},
		{"--values of a file that is no values file", []string{"--values", "stg-1/gpu-operator=" + writeFile(t, "- a\n- b\n")}, ExitUsage, "is not a Helm values file"},
		{"--values of an unknown context", []string{"--values", "x/gpu-operator=" + writeFile(t, "a: 1\n")}, ExitUsage, `--values names context "x", which init does not read`},
		{"unreachable clusters", nil, ExitUnknown, "nothing written: cannot read context prod-1"},
		{"a context the kubeconfig lacks", []string{"--context", "stg-1", "--context", "gone"}, ExitUnknown, `context "gone" is not in the kubeconfig`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"init", "--kubeconfig", kc, "-f", fleetFile, "--timeout", "5s"}, tt.args...)
			code, out, errOut := run(t, args...)
			if code != tt.code || !strings.Contains(errOut, tt.says) {
				t.Errorf("gpufleet %s: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, tt.code, tt.says, out, errOut)
			}
			if _, err := os.Stat(fleetFile); err == nil {
				t.Fatal("a fleet file was written")
			}
		})
	}
	t.Run("-o json: an Error document", func(t *testing.T) {
		code, out, _ := run(t, "init", "--kubeconfig", kc, "-f", fleetFile, "--timeout", "5s", "-o", "json")
		if code != ExitUnknown {
			t.Fatalf("exit %d\n%s", code, out)
		}
		checkSchema(t, "Error", []byte(out))
		var doc ErrorDocument
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.ExitCode != ExitUnknown || !strings.Contains(doc.Message, "cannot read context stg-1") {
			t.Errorf("%v: %+v", err, doc)
		}
	})
	t.Run("no contexts", func(t *testing.T) {
		code, _, errOut := run(t, "init", "--kubeconfig", writeKubeconfig(t), "-f", fleetFile)
		if code != ExitUnknown || !strings.Contains(errOut, "the kubeconfig has no contexts") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("an existing fleet file is left alone", func(t *testing.T) {
		if err := os.WriteFile(fleetFile, []byte("# mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(fleetFile)
		code, _, errOut := run(t, "init", "--kubeconfig", kc, "-f", fleetFile)
		if code != ExitFailed || !strings.Contains(errOut, "exists: init writes a new fleet file; --force overwrites it") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if b, _ := os.ReadFile(fleetFile); string(b) != "# mine\n" {
			t.Errorf("the fleet file changed: %q", b)
		}
	})
}

// TestInitReasonsInSchema: the report's reasons are exactly adopt's, so a
// new one cannot be added without saying it in the schema.
func TestInitReasonsInSchema(t *testing.T) {
	raw, err := os.ReadFile("../../docs/schema/cli.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var problem struct {
		Properties struct {
			Reason struct {
				Enum []string `json:"enum"`
			} `json:"reason"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc.Defs["InitProblem"], &problem); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range adopt.Reasons {
		want = append(want, string(r))
	}
	got := problem.Properties.Reason.Enum
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("InitProblem.reason enum %v, adopt.Reasons %v", got, want)
	}
}

// TestInitReportSchema: the -o json report, written and refused, follows
// docs/schema/cli.schema.json (without a testbed: the report of clusters
// described in Go, as Read would return them).
func TestInitReportSchema(t *testing.T) {
	node := func(name, product, driver string, extra ...string) adopt.Node {
		l := map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, "nvidia.com/cuda.driver-version.full": driver}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return adopt.Node{Name: name, Labels: l}
	}
	operator := adopt.Deployment{Namespace: "gpu-operator", Name: "gpu-operator",
		Labels:     map[string]string{"helm.sh/chart": "gpu-operator-v25.3.4", "app.kubernetes.io/instance": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
		Containers: []adopt.Container{{Name: "gpu-operator", Image: "nvcr.io/nvidia/gpu-operator:v25.3.4"}}}
	policy := []adopt.ClusterPolicy{{Name: "cluster-policy", DriverVersion: "570.172.08"}}
	record := []adopt.HelmRelease{{Namespace: "gpu-operator", Name: "gpu-operator", Record: "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v2", Revision: 2,
		Values: map[string]any{"driver": map[string]any{"repository": "registry.example.com/nvidia", "version": "570.172.08"}, "mig": map[string]any{"strategy": "single"}}}}
	clusters := []adopt.Cluster{
		{Context: "stg-1", Nodes: []adopt.Node{node("s-1", "NVIDIA-H100-80GB-HBM3", "570.172.08")}, Deployments: []adopt.Deployment{operator}, ClusterPolicies: policy, Releases: record},
		{Context: "prod-1", Nodes: []adopt.Node{node("p-1", "NVIDIA-A100-SXM4-80GB", "570.172.08", "nvidia.com/mig.config", "all-1g.10gb")}, Deployments: []adopt.Deployment{operator}, ClusterPolicies: policy, Releases: record},
	}
	for _, written := range []bool{true, false} {
		r := adopt.Judge(clusters, adopt.Options{})
		if r.Err() != nil || len(r.Warnings) != 1 || r.Fleet.Clusters[0].GPUOperator.Values == nil {
			t.Fatalf("want a fleet with values and a warning (prod-1's MIG strategy): %v %v", r.Err(), r.Warnings)
		}
		rep := newInitReport("fleet.toml", written, r)
		doc, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		checkSchema(t, "InitReport", doc)
	}
	clusters[1].Nodes = append(clusters[1].Nodes, node("p-2", "NVIDIA-A100-SXM4-80GB", "570.124.06", "nvidia.com/mig.config", "all-1g.10gb"),
		adopt.Node{Name: "p-3", Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
	clusters[0].Releases = []adopt.HelmRelease{{Namespace: "gpu-operator", Name: "gpu-operator", Forbidden: true, Err: "init may not list the Secrets of namespace gpu-operator"}}
	r := adopt.Judge(clusters, adopt.Options{})
	if len(r.Problems) == 0 {
		t.Fatal("no problems")
	}
	doc, err := json.Marshal(newInitReport("fleet.toml", false, r))
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "InitReport", doc)
}

// TestInitCompletesContexts: --context completes the kubeconfig's contexts.
func TestInitCompletesContexts(t *testing.T) {
	kc := writeKubeconfig(t, "stg-1", "prod-1")
	_, out, _ := run(t, "__complete", "init", "--kubeconfig", kc, "--context", "")
	if !strings.HasPrefix(out, "prod-1\nstg-1\n") {
		t.Errorf("completions:\n%s", out)
	}
}
