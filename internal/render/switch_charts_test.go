package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// TestSwitchGuardRealCharts: the switch guard reads the driver management
// back from the real chart's rendered ClusterPolicy (manifests mode):
// switching a ClusterPolicy-managed cluster to NVIDIADriver is refused on
// v25.3.4 (the testbed's operator: it would delete every driver pod at
// once) and on v26.7.0 (whose own migration gpufleet does not drive yet),
// each for its reason.
func TestSwitchGuardRealCharts(t *testing.T) {
	ops := sharedtest.Operators(t)
	src := &charts.FolderSource{Dir: ops}
	ctx := context.Background()
	for gpu, why := range map[string]string{"v25.3.4": "every driver pod of the cluster at once", "v26.7.0": "node by node"} {
		t.Run(gpu, func(t *testing.T) {
			base := fmt.Sprintf(applyFleet, gpu, "v25.4.0", gpu, "v25.4.0") + applyAdoptedClusterPolicy
			renderOut := func(text string) *render.Output {
				f, err := fleet.Parse("fleet.toml", []byte(text))
				if err != nil {
					t.Fatal(err)
				}
				out, err := render.RenderWith(f, render.Options{Charts: charts.Renderer{Ctx: ctx, Src: src}})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			dir := t.TempDir()
			if _, err := render.Write(renderOut(base), dir); err != nil {
				t.Fatal(err)
			}
			_, err := render.Write(renderOut(strings.Replace(base, `driver-management = "clusterpolicy"`, `driver-management = "nvidiadriver"`, 1)), dir)
			var se *render.SwitchError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), why) {
				t.Errorf("got %v, want a refusal saying %q", err, why)
			}
		})
	}
}
