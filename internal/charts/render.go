package charts

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// DefaultKubeVersion is the Kubernetes version charts are rendered for when
// none is given; Helm's own default (v1.20) is older than the Network
// Operator charts accept.
const DefaultKubeVersion = "v1.37.2"

// RenderOptions tune Render.
type RenderOptions struct {
	// ReleaseName and Namespace are the Helm release's; empty means the
	// chart's name for both.
	ReleaseName string
	Namespace   string
	// KubeVersion is the cluster's version; empty means DefaultKubeVersion.
	KubeVersion string
	// APIVersions are extra group/versions the cluster serves (for
	// templates that test .Capabilities.APIVersions).
	APIVersions []string
	// SkipSchemaValidation skips checking values against the chart's
	// values.schema.json: needed offline for schemas with remote $refs.
	SkipSchemaValidation bool
}

// Object is one rendered object and the template it came from.
type Object struct {
	// Template is the template's path, e.g. gpu-operator/templates/operator.yaml.
	Template string
	// Hook is the object's helm.sh/hook annotation, empty for a plain object.
	Hook   string
	Object *unstructured.Unstructured
}

// Render renders ch with values the way `helm template` does for an install
// on a cluster of opts.KubeVersion: subchart conditions and import-values
// applied, values checked against the chart's schema, templates rendered. It
// returns every object, hooks included, in a stable order (see SortObjects).
// ch is not modified.
func Render(ch *chart.Chart, values map[string]any, opts RenderOptions) ([]Object, error) {
	ch = copyChart(ch)
	if opts.ReleaseName == "" {
		opts.ReleaseName = ch.Name()
	}
	if opts.Namespace == "" {
		opts.Namespace = ch.Name()
	}
	caps, err := capabilities(opts)
	if err != nil {
		return nil, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s %s requires Kubernetes %s, not %s", ch.Name(), ch.Metadata.Version, ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	vals := chartutil.Values(deepCopy(values))
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, fmt.Errorf("chart %s dependencies: %w", ch.Name(), err)
	}
	rel := chartutil.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	renderVals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, rel, caps, opts.SkipSchemaValidation)
	if err != nil {
		return nil, &ValuesError{Chart: ch.Name(), Err: err}
	}
	files, err := engine.Render(ch, renderVals)
	if err != nil {
		return nil, templateError(ch.Name(), err)
	}
	return parseRendered(files)
}

// ValuesError is a chart refusing the values it is rendered with: its
// values.schema.json (or a subchart's) says they are wrong, as Helm would
// refuse them at install or upgrade.
type ValuesError struct {
	Chart string
	Err   error
}

func (e *ValuesError) Error() string { return fmt.Sprintf("chart %s values: %v", e.Chart, e.Err) }
func (e *ValuesError) Unwrap() error { return e.Err }

// TemplateError is a chart template that failed to render. Its message
// names the chart and the template (with line and column, as Helm gives
// them) but not what the template said: a template's fail, required or
// execution error can carry any file of its chart (.Files.Get), and its
// text would reach the CI log and the annotations of a pull request.
// Err holds Helm's error, for a caller that knows the chart is trusted;
// it is not unwrapped, so that no %v prints it by accident.
type TemplateError struct {
	Chart string
	// Template is where it failed: "gpu-operator/templates/x.yaml:3:4",
	// or "" when Helm's error does not say.
	Template string
	Err      error
}

func (e *TemplateError) Error() string {
	where := "a template"
	if e.Template != "" {
		where = "template " + e.Template
	}
	return fmt.Sprintf("render chart %s: %s failed (its message is not shown, as a template can put any file of its chart into it: run helm template on the chart to read it)", e.Chart, where)
}

// helmLocation finds the template in Helm's "execution error at
// (chart/templates/x.yaml:3:4): …" and "parse error at (…): …".
var helmLocation = regexp.MustCompile(`^(?:execution|parse) error (?:at|in) \(([^()\n]*)\)`)

func templateError(chart string, err error) error {
	te := &TemplateError{Chart: chart, Err: err}
	if m := helmLocation.FindStringSubmatch(err.Error()); m != nil {
		te.Template = m[1]
	}
	return te
}

func capabilities(opts RenderOptions) (*chartutil.Capabilities, error) {
	kv := opts.KubeVersion
	if kv == "" {
		kv = DefaultKubeVersion
	}
	parsed, err := chartutil.ParseKubeVersion(kv)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version %q: %w", kv, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *parsed
	caps.APIVersions = append(caps.APIVersions, opts.APIVersions...)
	return caps, nil
}

// parseRendered splits the rendered templates into objects. Partials and
// NOTES.txt are not manifests.
func parseRendered(files map[string]string) ([]Object, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var out []Object
	for _, name := range names {
		objs, err := crdcheck.DecodeObjects([]byte(files[name]))
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		for _, o := range objs {
			if o.GetKind() == "" {
				return nil, fmt.Errorf("template %s: object without kind", name)
			}
			out = append(out, Object{Template: name, Hook: o.GetAnnotations()["helm.sh/hook"], Object: o})
		}
	}
	SortObjects(out)
	return out, nil
}

// SortObjects orders objects as Helm installs them (namespaces and CRDs
// first, then by kind), then by namespace, name and template, so the same
// chart and values always give the same order.
func SortObjects(objs []Object) {
	rank := map[string]int{}
	for i, k := range releaseutil.InstallOrder {
		rank[k] = i
	}
	order := func(kind string) int {
		if r, ok := rank[kind]; ok {
			return r
		}
		return len(rank)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].Object, objs[j].Object
		if oa, ob := order(a.GetKind()), order(b.GetKind()); oa != ob {
			return oa < ob
		}
		for _, pair := range [][2]string{
			{a.GetKind(), b.GetKind()}, {a.GetAPIVersion(), b.GetAPIVersion()},
			{a.GetNamespace(), b.GetNamespace()}, {a.GetName(), b.GetName()},
			{objs[i].Template, objs[j].Template},
		} {
			if pair[0] != pair[1] {
				return pair[0] < pair[1]
			}
		}
		return false
	})
}

// copyChart copies what rendering changes: processing dependencies rewrites
// the dependency list and enabled flags and the values of each chart.
func copyChart(c *chart.Chart) *chart.Chart {
	out := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = nil
		for _, d := range c.Metadata.Dependencies {
			dc := *d
			md.Dependencies = append(md.Dependencies, &dc)
		}
		out.Metadata = &md
	}
	out.Values = deepCopy(c.Values)
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, copyChart(d))
	}
	out.SetDependencies(deps...)
	return &out
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopy(t)
	case chartutil.Values:
		return deepCopy(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopyValue(x)
		}
		return out
	default:
		return v
	}
}
