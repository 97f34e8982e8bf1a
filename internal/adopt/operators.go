package adopt

import (
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/imageref"
)

// chartOf says which operator chart a Deployment belongs to:
// ChartGPUOperator, ChartNetworkOperator, or "" for neither. The GPU
// Operator's Deployment carries app.kubernetes.io/component=gpu-operator
// in every chart version (templates/operator.yaml), whatever the chart was
// renamed to; both carry helm.sh/chart=<chart>-<version>.
func chartOf(d Deployment) string {
	label := d.Labels[v1alpha1.LabelHelmChart]
	switch {
	case d.Labels[v1alpha1.LabelComponent] == ChartGPUOperator, chartVersionOf(label, ChartGPUOperator) != "":
		return ChartGPUOperator
	case chartVersionOf(label, ChartNetworkOperator) != "":
		return ChartNetworkOperator
	}
	return ""
}

// chartVersionOf is the version of a helm.sh/chart label of chart, or "".
// Helm writes a "+" of the version as "_" in the label; the fleet file
// wants the version, so it is turned back.
func chartVersionOf(label, chart string) string {
	v, ok := strings.CutPrefix(label, chart+"-")
	if !ok {
		return ""
	}
	v = strings.ReplaceAll(v, "_", "+")
	if !chartVersion.MatchString(v) {
		return ""
	}
	return v
}

// installOf reads the Helm release, namespace and chart version of an
// operator's Deployment. The release is the chart's
// app.kubernetes.io/instance label (both charts' helpers set it to
// .Release.Name), or Helm's meta.helm.sh/release-name annotation; the
// namespace Helm's meta.helm.sh/release-namespace, else the Deployment's
// own (the charts install into the release namespace). The version is the
// helm.sh/chart label's, else the operator image's tag (a chart installed
// with its own appVersion as image tag, the default).
//
// What cannot be told is a problem for cluster: without the release name
// render would install a second operator beside this one, and without the
// version the release would be a guess.
func installOf(cluster, chart string, d Deployment) (*Install, Problems) {
	in := &Install{Deployment: d.Namespace + "/" + d.Name, Namespace: d.Namespace}
	var probs Problems
	bad := func(format string, args ...any) {
		probs = append(probs, Problem{Cluster: cluster, Reason: ReasonOperatorUnreadable, Message: fmt.Sprintf(format, args...)})
	}
	if ns, release, err := releaseOf(d); err == nil {
		in.Namespace, in.Release = ns, release
	}
	switch {
	case in.Release == "":
		bad("Deployment %s (%s) names no Helm release (no %s label, no %s annotation): gpufleet adopts an operator that Helm installed; reinstall it with Helm, or leave this cluster out (--context)",
			in.Deployment, chart, LabelInstance, AnnotationReleaseName)
	case !validRelease(in.Release):
		bad("Deployment %s (%s) belongs to Helm release %q, which is not a Helm release name (at most %d lower-case letters, digits and '-')",
			in.Deployment, chart, in.Release, maxHelmRelease)
	}
	if v := chartVersionOf(d.Labels[v1alpha1.LabelHelmChart], chart); v != "" {
		in.Version, in.VersionFrom = withV(v), VersionFromChartLabel
	} else if tag := imageref.Tag(operatorImage(chart, d)); chartVersion.MatchString(tag) {
		in.Version, in.VersionFrom = withV(tag), VersionFromImage
	} else {
		bad("cannot tell the chart version of %s (Deployment %s): its %s label is %q and its image %q has no version tag; label it as the chart does (%s=%s-<version>) and run init again",
			chart, in.Deployment, v1alpha1.LabelHelmChart, d.Labels[v1alpha1.LabelHelmChart], operatorImage(chart, d), v1alpha1.LabelHelmChart, chart)
	}
	return in, probs
}

// operatorImage is the image of the operator's own container: the one
// named after the chart, else the first.
func operatorImage(chart string, d Deployment) string {
	for _, c := range d.Containers {
		if c.Name == chart {
			return c.Image
		}
	}
	if len(d.Containers) > 0 {
		return d.Containers[0].Image
	}
	return ""
}

// operatorOf finds the one Deployment of chart among ds and reads it. It
// returns nil (and, for the GPU Operator, a problem) when there is none,
// and a problem naming them when there are several: two operators would
// fight over the same nodes, and init cannot tell which one render should
// adopt.
func operatorOf(cluster, chart string, ds []Deployment) (*Install, Problems) {
	var found []Deployment
	for _, d := range ds {
		if chartOf(d) == chart {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		if chart != ChartGPUOperator {
			return nil, nil
		}
		return nil, Problems{{Cluster: cluster, Reason: ReasonNoGPUOperator,
			Message: fmt.Sprintf("no GPU Operator found (no Deployment labelled %s=%s or %s=%s-<version> in any namespace): gpufleet adopts a GPU Operator that Helm installed; install it, or leave this cluster out (--context)",
				v1alpha1.LabelComponent, ChartGPUOperator, v1alpha1.LabelHelmChart, ChartGPUOperator)}}
	case 1:
		return installOf(cluster, chart, found[0])
	}
	names := make([]string, len(found))
	for i, d := range found {
		names[i] = d.Namespace + "/" + d.Name
	}
	return nil, Problems{{Cluster: cluster, Reason: ReasonSeveralOperators,
		Message: fmt.Sprintf("%d Deployments of the %s chart: %s; one cluster runs one: remove the others, then run init again", len(found), chart, strings.Join(names, ", "))}}
}
