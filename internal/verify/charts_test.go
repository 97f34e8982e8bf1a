package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// chartFleet renders its operators from a chart folder in the repository
// (the manifests mode): a GPU Operator chart of its own, small enough to
// read, at the version both releases name.
const chartFleet = `[charts]
repository = "charts"
mode = "manifests"

[releases.r1]
gpu-operator = "v25.3.4"
driver = "570.172.08"

[releases.r2]
gpu-operator = "v25.3.4"
driver = "580.95.05"

[clusters.stg-a]
environment = "staging"
[[clusters.stg-a.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2

[clusters.prod-a]
environment = "prod"
[[clusters.prod-a.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 4

[[waves]]
name = "staging"
clusters = ["stg-a"]

[[waves]]
name = "prod"
clusters = ["prod-a"]

[promotion]
stable = "r1"
`

const chartYAML = "apiVersion: v2\nname: gpu-operator\nversion: v25.3.4\n"

// operatorDeployment is the chart's one template: the operator itself,
// its image a value the change below edits in the chart.
const operatorDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  namespace: {{ .Release.Namespace }}
spec:
  selector:
    matchLabels: {app: gpu-operator}
  template:
    metadata:
      labels: {app: gpu-operator}
    spec:
      containers:
      - name: gpu-operator
        image: IMAGE
`

// chartRepo is a fleet repository on chartFleet with its chart folder.
func chartRepo(t *testing.T, image string) *fleetRepo {
	t.Helper()
	r := newFleetRepo(t)
	if err := os.WriteFile(r.file, []byte(chartFleet), 0o644); err != nil {
		t.Fatal(err)
	}
	r.writeChart(image)
	r.renderWithCharts()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "charts from the repository")
	return r
}

func (r *fleetRepo) writeChart(image string) {
	r.t.Helper()
	dir := filepath.Join(r.dir, "charts", "gpu-operator", "v25.3.4")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	tpl := []byte(operatorDeployment[:len(operatorDeployment)-len("IMAGE\n")] + image + "\n")
	for name, data := range map[string][]byte{"Chart.yaml": []byte(chartYAML), "templates/deployment.yaml": tpl} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// chartOptions renders the charts from the folder the fleet file names,
// as `gpufleet render` and `gpufleet verify` do without --charts.
func chartOptions(f *fleet.Fleet) (render.Options, error) {
	return render.Options{Charts: charts.Renderer{Ctx: context.Background(), Src: &charts.FolderSource{Dir: f.Charts.Repository}}}, nil
}

func (r *fleetRepo) renderWithCharts() {
	r.t.Helper()
	f, err := fleet.Load(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	opts, _ := chartOptions(f)
	out, err := render.RenderWith(f, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := render.Write(out, r.dir); err != nil {
		r.t.Fatal(err)
	}
}

// TestVerifyClustersChartEditedInPlace: a change that edits the operator
// chart in the repository's chart folder under the version the releases
// name moves every cluster at once, though fleet.toml is unchanged: the
// clusters check renders the base from the base's own chart and refuses.
func TestVerifyClustersChartEditedInPlace(t *testing.T) {
	r := chartRepo(t, "nvcr.io/nvidia/gpu-operator:v25.3.4")
	r.branch("chart-edited")
	r.writeChart("attacker.example/gpu-operator:latest")
	r.renderWithCharts()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "a chart edited in place")
	rep := r.verify(Options{Render: chartOptions})
	if status(rep)[CheckRendered] != StatusPassed {
		t.Fatalf("the tree is rendered: %v\n%s", status(rep), findingLines(rep))
	}
	wantMoved(t, r, rep, "repository = \"charts\"", "what cluster prod-a runs changes", "clusters/prod-a/operators/", "the charts it renders from changed under the same version")

	// The chart as it was, and a release started: the base's chart
	// renders the base, and the start moves staging alone.
	r.branch("started")
	r.applyWith(chartOptions, start("r2"), "")
	wantPassed(t, r.verify(Options{Render: chartOptions}))
}
