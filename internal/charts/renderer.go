package charts

import "context"

// Renderer renders operator charts from Src to plain manifests, as the
// manifests chart mode of render needs them (it is render.ChartRenderer).
// Ctx bounds the chart downloads a remote Src makes.
type Renderer struct {
	Ctx context.Context
	Src Source
}

// RenderChart renders chart at version into namespace with values, the
// release named after the chart (see [RenderManifests]).
func (r Renderer) RenderChart(chart, version, namespace string, values map[string]any) ([]byte, error) {
	return RenderManifests(r.Ctx, r.Src, chart, version, values, RenderOptions{Namespace: namespace, ReleaseName: chart})
}
