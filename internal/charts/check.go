package charts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// ChartSpec is one chart of a release and the values it is installed with.
type ChartSpec struct {
	Name    string
	Version string
	Values  map[string]any
	// Clusters are the clusters that install the chart with Values (their
	// own merged under gpufleet's), named when the chart refuses them;
	// none when no cluster does (gpufleet's values alone, as a cluster
	// without values of its own would have them).
	Clusters []string
}

// ExtraObject is an object gpufleet itself writes for clusters on a release
// (an NVIDIADriver, a NicClusterPolicy), with the file it is written to.
type ExtraObject struct {
	Origin string
	Object *unstructured.Unstructured
}

// ReleaseSpec is what to check for one release: its charts, and the objects
// gpufleet renders for clusters that run it.
type ReleaseSpec struct {
	Name    string
	Charts  []ChartSpec
	Objects []ExtraObject
}

// Finding is one problem with one object of one release.
type Finding struct {
	Release string `json:"release"`
	// Chart and Version name the chart whose CRDs the object was checked
	// against; empty when no chart of the release defines its kind.
	Chart   string `json:"chart,omitempty"`
	Version string `json:"version,omitempty"`
	// Origin is the chart template or gpufleet file the object came from.
	Origin string `json:"origin"`
	crdcheck.Problem
}

// Failure is a check that could not be done: a chart not found, unreadable,
// or failing to render.
type Failure struct {
	Release string `json:"release"`
	Chart   string `json:"chart,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error"`
	// ValuesRefused says the chart refused the values (its
	// values.schema.json): a problem of the values, which Helm would refuse
	// the same way, rather than a check that could not be done.
	ValuesRefused bool `json:"valuesRefused,omitempty"`
	// Clusters are the clusters that install the chart with those values
	// (ChartSpec.Clusters).
	Clusters []string `json:"clusters,omitempty"`
}

// Report is the outcome of Checker.Check.
type Report struct {
	Findings []Finding `json:"findings"`
	Failures []Failure `json:"failures"`
	// Notes say what was left out, e.g. a values schema not checked offline.
	Notes []string `json:"notes,omitempty"`
	// Objects is how many custom resources were checked.
	Objects int `json:"objects"`

	// found are the findings recorded, so that one problem of an object
	// gpufleet writes in several forms (a NicClusterPolicy at rest and
	// while a rollout moves OFED) is reported once.
	found map[string]bool
}

// Checker renders each release's charts and checks every custom resource
// against the CRDs of the exact chart versions, the way the API server would.
// Charts are loaded once per name and version. It is not safe for concurrent
// use of Check.
type Checker struct {
	Source Source
	// KubeVersion is the cluster version charts are rendered for.
	KubeVersion string

	mu     sync.Mutex
	loaded map[string]*loadedChart
}

type loadedChart struct {
	chart *chart.Chart
	set   *crdcheck.Set
	err   error
}

// Check checks releases and reports every problem found. Checking stops only
// for ctx; a release whose charts cannot be loaded is a Failure.
func (c *Checker) Check(ctx context.Context, releases []ReleaseSpec) *Report {
	r := &Report{Findings: []Finding{}, Failures: []Failure{}}
	notes := map[string]bool{}
	for _, rel := range releases {
		if ctx.Err() != nil {
			r.Failures = append(r.Failures, Failure{Release: rel.Name, Error: ctx.Err().Error()})
			continue
		}
		c.checkRelease(ctx, rel, r, notes)
	}
	for n := range notes {
		r.Notes = append(r.Notes, n)
	}
	sort.Strings(r.Notes)
	c.addHints(ctx, releases, r)
	return r
}

// versionSet is one chart version's CRDs, tagged for findings.
type versionSet struct {
	chart, version string
	set            *crdcheck.Set
}

func (c *Checker) checkRelease(ctx context.Context, rel ReleaseSpec, r *Report, notes map[string]bool) {
	var sets []versionSet
	loaded := map[string]*loadedChart{}
	for _, cs := range rel.Charts {
		lc := c.load(ctx, cs.Name, cs.Version)
		if lc.err != nil {
			r.Failures = append(r.Failures, Failure{Release: rel.Name, Chart: cs.Name, Version: cs.Version, Error: lc.err.Error()})
			continue
		}
		loaded[cs.Name] = lc
		sets = append(sets, versionSet{cs.Name, cs.Version, lc.set})
	}
	for _, cs := range rel.Charts {
		lc := loaded[cs.Name]
		if lc == nil {
			continue
		}
		opts := RenderOptions{KubeVersion: c.KubeVersion}
		if hasRemoteSchemaRef(lc.chart) {
			opts.SkipSchemaValidation = true
			notes[fmt.Sprintf("%s %s: values not checked against values.schema.json (it has remote $refs)", cs.Name, cs.Version)] = true
		}
		objs, err := Render(lc.chart, cs.Values, opts)
		if err != nil {
			var verr *ValuesError
			r.Failures = append(r.Failures, Failure{Release: rel.Name, Chart: cs.Name, Version: cs.Version, Error: err.Error(),
				ValuesRefused: errors.As(err, &verr), Clusters: cs.Clusters})
			continue
		}
		// The chart's own CRDs first, then the other charts' of the release:
		// a cluster has them all (the GPU Operator's NFD serves the Network
		// Operator's NodeFeatureRules).
		own := append([]versionSet{sets[indexOf(sets, cs.Name)]}, sets...)
		for _, o := range objs {
			c.checkObject(ctx, rel.Name, o.Template, o.Object, own, r, false)
		}
	}
	incomplete := len(sets) < len(rel.Charts)
	for _, o := range rel.Objects {
		// With a chart missing, a kind no loaded chart defines may well be
		// defined by the missing one: the Failure already says it was not
		// checked.
		if incomplete && !anyHasKind(sets, o.Object.GroupVersionKind().GroupKind()) {
			continue
		}
		c.checkObject(ctx, rel.Name, o.Origin, o.Object, sets, r, true)
	}
}

func anyHasKind(sets []versionSet, gk schema.GroupKind) bool {
	for _, s := range sets {
		if s.set.HasKind(gk) {
			return true
		}
	}
	return false
}

func indexOf(sets []versionSet, chart string) int {
	for i, s := range sets {
		if s.chart == chart {
			return i
		}
	}
	return 0
}

// checkObject checks one object against the set defining its kind. asWritten
// is for gpufleet's own objects: they must not lean on the schema's defaults
// (see crdcheck.Set.ValidateAsWritten); a chart's objects are judged as the
// API server judges them.
func (c *Checker) checkObject(ctx context.Context, release, origin string, obj *unstructured.Unstructured, sets []versionSet, r *Report, asWritten bool) {
	gk := obj.GroupVersionKind().GroupKind()
	if crdcheck.IsBuiltin(gk.Group) {
		return
	}
	r.Objects++
	if len(sets) == 0 {
		return
	}
	use := sets[0]
	for _, s := range sets {
		if s.set.HasKind(gk) {
			use = s
			break
		}
	}
	validate := use.set.Validate
	if asWritten {
		validate = use.set.ValidateAsWritten
	}
	for _, p := range validate(ctx, obj) {
		// By what is wrong, not where: the first file it is found in
		// names it.
		key := strings.Join([]string{release, use.chart, use.version, p.Object(), p.Message()}, "\x00")
		if r.found[key] {
			continue
		}
		if r.found == nil {
			r.found = map[string]bool{}
		}
		r.found[key] = true
		r.Findings = append(r.Findings, Finding{Release: release, Chart: use.chart, Version: use.version, Origin: origin, Problem: p})
	}
}

// load loads a chart version and its CRDs once.
func (c *Checker) load(ctx context.Context, name, version string) *loadedChart {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded == nil {
		c.loaded = map[string]*loadedChart{}
	}
	key := name + "@" + version
	if lc, ok := c.loaded[key]; ok {
		return lc
	}
	lc := &loadedChart{}
	lc.chart, lc.err = c.Source.Load(ctx, name, version)
	if lc.err == nil {
		list, err := CRDs(lc.chart)
		if err != nil {
			lc.err = err
		} else {
			lc.set, lc.err = crdcheck.NewSet(dedupeCRDs(list)...)
			if lc.err != nil {
				lc.err = fmt.Errorf("crds of %s %s: %w", name, version, lc.err)
			}
		}
	}
	c.loaded[key] = lc
	return lc
}

// dedupeCRDs keeps the first CRD of each name: a parent chart's own copy of
// a CRD wins over a subchart's.
func dedupeCRDs(in []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	seen := map[schema.GroupKind]bool{}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, c := range in {
		gk := schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}
		if seen[gk] {
			continue
		}
		seen[gk] = true
		out = append(out, c)
	}
	return out
}

// addHints says, for each unknown field, in which other versions of the same
// chart the field exists: the usual cause is a setting written for another
// operator version. Versions looked at are those of the releases checked
// and, for a folder source, every version in the folder.
func (c *Checker) addHints(ctx context.Context, releases []ReleaseSpec, r *Report) {
	versions := map[string]map[string]bool{}
	for _, rel := range releases {
		for _, cs := range rel.Charts {
			if versions[cs.Name] == nil {
				versions[cs.Name] = map[string]bool{}
			}
			versions[cs.Name][cs.Version] = true
		}
	}
	// Only a folder lists its versions here: from a repository, each listed
	// version would be a download.
	if l, ok := c.Source.(*FolderSource); ok {
		for name := range versions {
			vs, err := l.Versions(ctx, name)
			if err != nil {
				continue
			}
			for _, v := range vs {
				versions[name][v] = true
			}
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Rule != crdcheck.RuleUnknownField || f.Chart == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(f.APIVersion)
		if err != nil {
			continue
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: f.Kind}
		var in []string
		for v := range versions[f.Chart] {
			if sameVersion(v, f.Version) {
				continue
			}
			lc := c.load(ctx, f.Chart, v)
			if lc.err == nil && lc.set.HasPath(gk, f.Path) {
				in = append(in, v)
			}
		}
		if len(in) > 0 {
			sort.Slice(in, func(a, b int) bool { return CompareVersions(in[a], in[b]) < 0 })
			f.Hint = fmt.Sprintf("exists in %s %s", f.Chart, strings.Join(in, ", "))
		}
	}
}

// hasRemoteSchemaRef says whether a values.schema.json of the chart or a
// subchart refers to a schema over the network, which cannot be checked
// offline.
func hasRemoteSchemaRef(ch *chart.Chart) bool {
	if s := string(ch.Schema); strings.Contains(s, `"$ref": "http`) || strings.Contains(s, `"$ref":"http`) {
		return true
	}
	return slices.ContainsFunc(ch.Dependencies(), hasRemoteSchemaRef)
}
