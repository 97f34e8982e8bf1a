package charts

import "context"

// Renderer renders operator charts from Src to plain manifests, as the
// manifests chart mode of render needs them (it is render.ChartRenderer).
// Ctx bounds the chart downloads a remote Src makes.
type Renderer struct {
	Ctx context.Context
	Src Source
}

// RenderChart renders chart at version as the Helm release named release in
// namespace, with values (see [RenderManifests]). The release name matters:
// the charts name objects after it (the Network Operator's Deployment, the
// Node Feature Discovery subchart's objects), so an adopted release renders
// under the name it was installed with.
func (r Renderer) RenderChart(chart, version, release, namespace string, values map[string]any) ([]byte, error) {
	return RenderManifests(r.Ctx, r.Src, chart, version, values, RenderOptions{Namespace: namespace, ReleaseName: release})
}
