package charts

import (
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// CRDs returns the CustomResourceDefinitions ch ships in its crds/ folder and
// in those of its subcharts, whether or not a subchart is enabled: Helm
// installs a subchart's CRDs with it, and a cluster often gets them from
// another chart (the GPU Operator's NFD serves the Network Operator).
// The chart's own CRDs come first, then each subchart's.
func CRDs(ch *chart.Chart) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range ch.CRDObjects() {
		crds, err := crdcheck.ParseCRDs(f.File.Data)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", ch.Name(), f.Filename, err)
		}
		out = append(out, crds...)
	}
	return out, nil
}

// InstalledCRDs returns the CRDs Helm installs with ch and values: those of
// the chart and of the subcharts that values leave enabled.
func InstalledCRDs(ch *chart.Chart, values map[string]any) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	ch = copyChart(ch)
	if err := chartutil.ProcessDependenciesWithMerge(ch, chartutil.Values(deepCopy(values))); err != nil {
		return nil, fmt.Errorf("chart %s dependencies: %w", ch.Name(), err)
	}
	return CRDs(ch)
}
