package charts

import (
	"context"
	"fmt"
	"path"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// FleetCheck is what `gpufleet validate` runs: every release of a fleet
// file, its two charts with gpufleet's values and the objects render
// writes for clusters running it, checked against the CRDs of exactly
// those chart versions. No cluster is needed.
type FleetCheck struct {
	Fleet  *fleet.Fleet
	Source Source
	// KubeVersion is the cluster version charts are rendered for.
	KubeVersion string
	// Render renders the fleet as `gpufleet render` would (its chart
	// renderer in the manifests mode).
	Render render.Options
}

// Run renders every release (render.EveryRelease) and checks it. An error
// means the fleet could not be rendered; what the check found, and the
// charts it could not check, are in the Report.
func (c FleetCheck) Run(ctx context.Context) (*Report, error) {
	rendered, err := render.EveryRelease(c.Fleet, c.Render)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	specs, err := ReleaseSpecs(c.Fleet, rendered)
	if err != nil {
		return nil, err
	}
	checker := &Checker{Source: c.Source, KubeVersion: c.KubeVersion}
	return checker.Check(ctx, specs), nil
}

// ReleaseSpecs lists what to check for each release of f, in the fleet
// file's order: its two charts with gpufleet's values, and the NVIDIA and
// Mellanox objects of files (render.EveryRelease) for clusters running it.
//
// Note: the objects are read back from the bytes render writes, not taken
// from render before it encodes them, on purpose: the check sees them as
// written, as Flux applies them and as offline checks such as kubeconform
// see them (no defaults, no Go zero values dropped or added).
func ReleaseSpecs(f *fleet.Fleet, files []render.ReleaseFile) ([]ReleaseSpec, error) {
	byRelease := map[string][]ExtraObject{}
	for _, rf := range files {
		if ext := path.Ext(rf.Path); ext != ".yaml" && ext != ".yml" {
			continue
		}
		objs, err := crdcheck.DecodeObjects(rf.Data)
		if err != nil {
			return nil, fmt.Errorf("read rendered %s: %w", rf.Origin(), err)
		}
		for _, o := range objs {
			switch o.GroupVersionKind().Group {
			case "nvidia.com", "mellanox.com":
				byRelease[rf.Release] = append(byRelease[rf.Release], ExtraObject{Origin: rf.Origin(), Object: o})
			}
		}
	}
	var specs []ReleaseSpec
	for _, name := range f.ReleaseNames() {
		rel := f.Releases[name]
		spec := ReleaseSpec{Name: name, Objects: byRelease[name]}
		if rel.GPUOperator != "" {
			// Once per distinct values the clusters install it with (their
			// actuator sets the operator's upgrade policy; an adopted
			// cluster brings values of its own).
			for _, v := range render.GPUOperatorValueSets(f, rel) {
				spec.Charts = append(spec.Charts, ChartSpec{Name: "gpu-operator", Version: rel.GPUOperator, Values: v.Values, Clusters: v.Clusters})
			}
		}
		if rel.RunsNetworkOperator() {
			// Once per distinct values too: clusters adopted with values
			// of their own.
			for _, v := range render.NetworkOperatorValueSets(f, rel) {
				spec.Charts = append(spec.Charts, ChartSpec{Name: "network-operator", Version: rel.NetworkOperator, Values: v.Values, Clusters: v.Clusters})
			}
		}
		specs = append(specs, spec)
	}
	return specs, nil
}
