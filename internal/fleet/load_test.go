package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadExample(t *testing.T) {
	f, err := Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatalf("the example fleet must be valid:\n%v", err)
	}
	if got, want := f.ClusterNames(), []string{"prod-a100", "prod-h100-a", "prod-h100-b", "stg-h100"}; !cmp.Equal(got, want) {
		t.Errorf("clusters: %s", cmp.Diff(want, got))
	}
	if got, want := len(f.ReleaseNames()), 3; got != want {
		t.Errorf("releases: got %d, want %d", got, want)
	}
	if !f.Releases["r2026-10-drill"].ExpectFailure {
		t.Error("the drill release must be marked expect-failure")
	}
	if f.Charts.Mode != ModeHelmRelease {
		t.Errorf("chart mode defaults to %q, got %q", ModeHelmRelease, f.Charts.Mode)
	}
}

func TestParseReportsEveryProblemWithPosition(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	tests := []struct {
		name string
		// edit turns the minimal valid fleet into the bad input.
		edit func(string) string
		want []string
	}{
		{
			name: "unknown keys, all of them",
			edit: func(s string) string {
				s = strings.Replace(s, `nodes = 4`+"\n", `nodes = 4`+"\n"+`nodeSelecter = "x"`+"\n", 1)
				return strings.Replace(s, "[policy]\n", "[policy]\nsoak-time = \"1h\"\n", 1)
			},
			want: []string{
				`f.toml:18:1: clusters.stg.pools[0].nodeSelecter: unknown key`,
				`f.toml:49:1: policy.soak-time: unknown key`,
			},
		},
		{
			name: "wrong type stops decoding",
			edit: func(s string) string { return strings.Replace(s, "nodes = 8", `nodes = "eight"`, 1) },
			want: []string{
				`f.toml:26:9: clusters.prod-a.pools[0].nodes: wrong type: got a string, want an integer`,
			},
		},
		{
			name: "controller versions: in every release or none, an image to take them from",
			edit: func(s string) string {
				s = strings.Replace(s, `driver = "570.172.08"`, `driver = "570.172.08"`+"\n"+`controller = "v0.9.0"`, 1)
				return strings.Replace(s, `[[clusters.stg.pools]]`, `kubernetes = "1.x"`+"\n\n"+`[[clusters.stg.pools]]`, 1)
			},
			want: []string{
				`f.toml:1:1: controller: image is required where releases name a controller version (releases r1): the image repository without a tag, e.g. image = "registry.example.com/gpufleet/gpufleet-controller"`,
				`f.toml:7:2: releases.r2: controller is required: releases r1 name a controller version, and a release without one would remove gpufleet-controller from every cluster it reaches`,
				`f.toml:15:1: clusters.stg.kubernetes: "1.x" is not a Kubernetes minor version such as "1.31"`,
			},
		},
		{
			name: "controller image with a tag, a version that is none",
			edit: func(s string) string {
				s = strings.Replace(s, `driver = "570.172.08"`, `driver = "570.172.08"`+"\n"+`controller = "latest"`, 1)
				s = strings.Replace(s, `driver = "580.95.05"`, `driver = "580.95.05"`+"\n"+`controller = "v0.9.0"`, 1)
				return "[controller]\nimage = \"registry.internal.example/gpufleet-controller:v1\"\n\n" + s
			},
			want: []string{
				`f.toml:2:1: controller.image: "registry.internal.example/gpufleet-controller:v1" names a tag without a digest: write the repository alone (each release's controller version is the tag, and may pin its build: controller = "v0.9.0@sha256:…"), or pin one image for every cluster by digest (registry.internal.example/gpufleet-controller@sha256:…)`,
				`f.toml:8:1: releases.r1.controller: "latest" is not a gpufleet-controller version such as v0.9.0 (the image's tag), optionally pinned to its build as v0.9.0@sha256:<64 hex digits>`,
			},
		},
		{
			name: "gitops: an engine that is none, Argo CD without a repository and on HelmReleases, overrides of nothing",
			edit: func(s string) string {
				return strings.Replace(s, "[promotion]", "[gitops]\nengine = \"argo\"\n\n[gitops.environments.prod]\nengine = \"argocd\"\n\n[gitops.environments.production]\nengine = \"flux\"\n\n[gitops.clusters.prod-c]\nengine = \"flux\"\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:50:2: gitops: repository is required where a cluster is on Argo CD (prod-a, prod-b, engine set at gitops.environments.prod.engine): the fleet repository's URL as Argo CD reaches it, e.g. repository = "https://git.example.com/platform/fleet.git"`,
				`f.toml:51:1: gitops.engine: "argo" is not a GitOps engine: use "flux" (the default) or "argocd" (did you mean "argocd"?)`,
				"f.toml:54:1: gitops.environments.prod.engine: cluster prod-a is on Argo CD, which needs [charts] mode = \"manifests\": a Flux HelmRelease has no Argo CD counterpart that keeps both operators in their own namespaces in one ordered sync, while pre-rendered charts are plain objects Argo CD orders by sync waves (and a pull request shows each one)",
				`f.toml:56:2: gitops.environments.production: no cluster has environment "production" (known: prod, staging)`,
				`f.toml:59:2: gitops.clusters.prod-c: unknown cluster "prod-c" (did you mean "prod-a"?)`,
			},
		},
		{
			name: "gitops: a repository that is no URL, a branch that is no branch",
			edit: func(s string) string {
				return strings.Replace(s, "[promotion]", "[gitops]\nrepository = \"fleet\"\nbranch = \"ma in\"\n\n[gitops.clusters.stg]\nengine = \"argocd\"\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:51:1: gitops.repository: "fleet" is not a git repository URL (https://, ssh://, git@host:path, git:// or file://)`,
				`f.toml:52:1: gitops.branch: "ma in" is not a git branch name`,
				"f.toml:55:1: gitops.clusters.stg.engine: cluster stg is on Argo CD, which needs [charts] mode = \"manifests\": a Flux HelmRelease has no Argo CD counterpart that keeps both operators in their own namespaces in one ordered sync, while pre-rendered charts are plain objects Argo CD orders by sync waves (and a pull request shows each one)",
			},
		},
		{
			name: "evict: a mode that is none, a selector that is none, a wait without its bound",
			edit: func(s string) string {
				s = strings.Replace(s, "[policy]\n", "[policy]\nevict = \"cpu-pods\"\ngpu-pod-selector = \"app in trainer\"\nwait-for-pods = \"job=train\"\n", 1)
				return strings.Replace(s, "[promotion]", "[policy.clusters.stg]\nwait-timeout = \"0s\"\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:48:1: policy.evict: "cpu-pods" is not what a drain evicts: use "gpu-pods" (the pods that hold a GPU, the default: the driver swap needs only those gone) or "all" (every pod but DaemonSet and mirror pods, as kubectl drain)`,
				`f.toml:49:1: policy.gpu-pod-selector: "app in trainer" is not a label selector such as "app=trainer" or "team in (ml, research)"`,
				`f.toml:50:1: policy.wait-for-pods: wait-for-pods and wait-timeout go together: the pods a drain leaves to finish, and for how long (e.g. wait-for-pods = "app=trainer", wait-timeout = "4h")`,
				`f.toml:54:1: policy.clusters.stg.wait-timeout: "0s" is not a duration: use e.g. 30m, 2h or 1h30m`,
			},
		},
		{
			name: "syntax error",
			edit: func(s string) string { return strings.Replace(s, "[policy]", "[policy", 1) },
			want: []string{
				`f.toml:47:8: expected ']' to close table name`,
			},
		},
		{
			name: "unknown references",
			edit: func(s string) string {
				s = strings.Replace(s, `clusters = ["stg"]`, `clusters = ["stg", "stagin"]`, 1)
				return strings.Replace(s, `stable = "r1"`, `stable = "r3"`, 1)
			},
			want: []string{
				`f.toml:39:20: waves[0].clusters[1]: unknown cluster "stagin" (known: prod-a, prod-b, stg)`,
				`f.toml:51:1: promotion.stable: unknown release "r3" (did you mean "r1"?)`,
			},
		},
		{
			name: "cluster in two waves",
			edit: func(s string) string {
				return strings.Replace(s, `clusters = ["stg"]`, `clusters = ["stg", "prod-b"]`, 1)
			},
			want: []string{
				`f.toml:43:23: waves[1].clusters[1]: cluster "prod-b" is in two waves: "staging" and "prod"`,
			},
		},
		{
			name: "cluster in no wave",
			edit: func(s string) string {
				return strings.Replace(s, `clusters = ["prod-a", "prod-b"]`, `clusters = ["prod-a"]`, 1)
			},
			want: []string{
				`f.toml:28:2: clusters.prod-b: cluster "prod-b" is in no wave: add it to one [[waves]] clusters list`,
			},
		},
		{
			name: "duplicate names",
			edit: func(s string) string {
				s = strings.Replace(s, `name = "prod"`+"\n", `name = "staging"`+"\n", 1)
				return strings.Replace(s, "[[waves]]", "[[clusters.prod-b.pools]]\nname = \"a100\"\nproduct = \"NVIDIA-A100-SXM4-80GB\"\nnodes = 2\n\n[[waves]]", 1)
			},
			want: []string{
				`f.toml:38:1: clusters.prod-b.pools[1].name: duplicate pool name "a100" (also pools[0])`,
				`f.toml:47:1: waves[1].name: duplicate wave name "staging" (also waves[0])`,
			},
		},
		{
			name: "canary not in its wave, pause without canary",
			edit: func(s string) string {
				s = strings.Replace(s, `canary = "prod-a"`, `canary = "stg"`, 1)
				return strings.Replace(s, `clusters = ["stg"]`, "clusters = [\"stg\"]\npause-after-canary = true", 1)
			},
			want: []string{
				`f.toml:40:1: waves[0].pause-after-canary: pause-after-canary needs a canary cluster in wave "staging"`,
				`f.toml:45:1: waves[1].canary: canary "stg" is not one of the wave's clusters [prod-a prod-b]`,
			},
		},
		{
			name: "malformed versions and durations",
			edit: func(s string) string {
				s = strings.Replace(s, `gpu-operator = "v25.3.4"`, `gpu-operator = "25.3"`, 1)
				s = strings.Replace(s, `driver = "580.95.05"`, `driver = "latest"`, 1)
				return strings.Replace(s, "[policy]\n", "[policy]\nsoak = \"30 minutes\"\nmax-unavailable = \"150%\"\n", 1)
			},
			want: []string{
				`f.toml:2:1: releases.r1.gpu-operator: "25.3" is not a chart version such as v25.10.1`,
				`f.toml:9:1: releases.r2.driver: "latest" is not a driver version such as 580.95.05`,
				`f.toml:48:1: policy.soak: "30 minutes" is not a duration: use e.g. 30m, 2h or 1h30m`,
				`f.toml:49:1: policy.max-unavailable: "150%" must be between 1% and 100%`,
			},
		},
		{
			name: "windows",
			edit: func(s string) string {
				return strings.Replace(s, "[promotion]", "[[policy.windows]]\ndays = [\"Mon\", \"Funday\"]\nstart = \"22:00\"\nend = \"22:00\"\ntime-zone = \"Mars/Olympus\"\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:51:16: policy.windows[0].days[1]: "Funday" is not a day: use Mon, Tue, Wed, Thu, Fri, Sat or Sun`,
				`f.toml:53:1: policy.windows[0].end: start and end are both 22:00: a window must have a length`,
				`f.toml:54:1: policy.windows[0].time-zone: unknown time zone "Mars/Olympus"`,
			},
		},
		{
			name: "policy overrides for unknown environment and cluster",
			edit: func(s string) string {
				return strings.Replace(s, "[promotion]", "[policy.environments.production]\nsoak = \"2h\"\n[policy.clusters.prod-c]\nparallel-nodes = 0\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:50:2: policy.environments.production: no cluster has environment "production" (known: prod, staging)`,
				`f.toml:52:2: policy.clusters.prod-c: unknown cluster "prod-c" (did you mean "prod-a"?)`,
				`f.toml:53:1: policy.clusters.prod-c.parallel-nodes: parallel-nodes must be at least 1, got 0`,
			},
		},
		{
			name: "canary as large as the cluster",
			edit: func(s string) string { return strings.Replace(s, "[policy]\n", "[policy]\ncanary-nodes = 4\n", 1) },
			want: []string{
				`f.toml:48:1: policy.canary-nodes: canary-nodes (4) must be fewer than the 4 nodes of cluster "prod-b"`,
				`f.toml:48:1: policy.canary-nodes: canary-nodes (4) must be fewer than the 4 nodes of cluster "stg"`,
			},
		},
		{
			name: "promotion state",
			edit: func(s string) string {
				return strings.Replace(s, `stable = "r1"`, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\", stage = \"canary\" }\napproved = [\"r2-prod\"]", 1)
			},
			want: []string{
				`f.toml:52:47: promotion.rollout.stage: wave "staging" has no canary cluster, so it has no canary stage`,
				`f.toml:53:13: promotion.approved[0]: "r2-prod" is not an approval: use RELEASE/WAVE or RELEASE/CLUSTER, e.g. r2026-08/prod-h100`,
			},
		},
		{
			name: "empty fleet",
			edit: func(string) string { return "" },
			want: []string{
				`f.toml:1:1: clusters: the fleet has no clusters: add at least one [clusters.<name>] table`,
				`f.toml:1:1: promotion: stable is required: the release every cluster runs when no rollout has reached it`,
				`f.toml:1:1: releases: the fleet has no releases: add at least one [releases.<name>] table`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantProblems(t, tt.edit(base), tt.want) })
	}
}

func TestPolicyOverrides(t *testing.T) {
	f, err := Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	stg, prod, a100 := f.PolicyFor("stg-h100"), f.PolicyFor("prod-h100-b"), f.PolicyFor("prod-a100")
	if stg.ParallelNodes != 2 || stg.MaxUnavailable != (Amount{Value: 25, Percent: true}) || len(stg.Windows) != 0 {
		t.Errorf("staging keeps [policy]: %+v", stg)
	}
	if prod.ParallelNodes != 1 || prod.MaxUnavailable != (Amount{Value: 2}) || prod.Soak != 2*time.Hour || len(prod.Windows) != 1 || len(prod.Freezes) != 1 {
		t.Errorf("prod takes its environment's overrides: %+v", prod)
	}
	if a100.InstallTimeout != 30*time.Minute || a100.Soak != 2*time.Hour || prod.InstallTimeout != 20*time.Minute {
		t.Errorf("a cluster's own override applies on top of its environment's: %+v", a100)
	}
	if got := (Amount{Value: 25, Percent: true}).Of(10); got != 2 {
		t.Errorf("25%% of 10 nodes: got %d, want 2", got)
	}
	if got := (Amount{Value: 25, Percent: true}).Of(2); got != 1 {
		t.Errorf("a percentage never rounds to zero nodes: got %d", got)
	}
}

func TestReleaseFor(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	tests := []struct {
		rollout string
		want    map[string]string
	}{
		{"", map[string]string{"stg": "r1", "prod-a": "r1", "prod-b": "r1"}},
		{`rollout = { release = "r2", wave = "staging" }`, map[string]string{"stg": "r2", "prod-a": "r1", "prod-b": "r1"}},
		{`rollout = { release = "r2", wave = "prod", stage = "canary" }`, map[string]string{"stg": "r2", "prod-a": "r2", "prod-b": "r1"}},
		{`rollout = { release = "r2", wave = "prod" }`, map[string]string{"stg": "r2", "prod-a": "r2", "prod-b": "r2"}},
	}
	for _, tt := range tests {
		t.Run(tt.rollout, func(t *testing.T) {
			f, err := Parse("f.toml", []byte(strings.Replace(base, `stable = "r1"`, "stable = \"r1\"\n"+tt.rollout, 1)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range f.ClusterNames() {
				got[c] = f.ReleaseFor(c).Name
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("releases (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChartsFolderInManifestsMode: with the charts rendered by gpufleet,
// the repository may be a folder, named relative to the fleet file; a
// HelmRelease needs a URL Flux can fetch.
func TestChartsFolderInManifestsMode(t *testing.T) {
	const rest = `
[releases.r]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "570.172.08"
[clusters.stg]
environment = "staging"
[[clusters.stg.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2
[[waves]]
name = "staging"
clusters = ["stg"]
[promotion]
stable = "r"
`
	f, err := Parse("fleets/site/fleet.toml", []byte("[charts]\nmode = \"manifests\"\nrepository = \"../charts\"\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("fleets", "charts"); f.Charts.Repository != want {
		t.Errorf("repository %q, want %q (relative to the fleet file)", f.Charts.Repository, want)
	}
	_, err = Parse("fleet.toml", []byte("[charts]\nrepository = \"../charts\"\n"+rest))
	if err == nil || !strings.Contains(err.Error(), `with mode = "manifests" a folder of charts also works`) {
		t.Errorf("a folder in helmrelease mode: %v", err)
	}
}
