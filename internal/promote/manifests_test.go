package promote

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// stubCharts renders a chart to one ConfigMap naming its version.
type stubCharts struct{}

func (stubCharts) RenderChart(chart, version, _, namespace string, _ map[string]any) ([]byte, error) {
	return []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  version: %s\n", chart, namespace, version)), nil
}

// TestPromotionInManifestsMode: a fleet whose operators are pre-rendered
// manifests is promoted with the charts render needs (Options.Render).
func TestPromotionInManifestsMode(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	src, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), "[charts]\n", "[charts]\nmode = \"manifests\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := func(*fleet.Fleet) (render.Options, error) { return render.Options{Charts: stubCharts{}}, nil }
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderWith(f, ro)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.Write(out, dir); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "manifests mode")

	if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR}); err == nil || !strings.Contains(err.Error(), "needs the operator charts") {
		t.Fatalf("without the charts a manifests-mode promotion must say so, got %v", err)
	}
	if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR, Render: ro}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusters/stg-h100/operators/gpu-operator-v25.10.1.yaml")); err != nil {
		t.Errorf("staging's operators were not re-rendered at the new release: %v", err)
	}
	if out := gitT(t, dir, "status", "--porcelain"); out != "" {
		t.Errorf("the work tree is not clean after the commit:\n%s", out)
	}
}
