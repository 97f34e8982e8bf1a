package promote

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Plan is what a promotion command would change, computed without writing.
type Plan struct {
	Step Step `json:"-"`
	// Summary is the step's commit subject.
	Summary string `json:"summary"`
	// FleetLines are the lines of fleet.toml removed ("-") and added ("+").
	FleetLines []string `json:"fleetLines"`
	// Clusters maps each cluster to the object changes rendered for it.
	Clusters map[string][]string `json:"clusters"`
	// Gate lists the clusters the gate would check first.
	Gate []string `json:"gate,omitempty"`
	// GateRequired says why --skip-gate would be refused for this step.
	GateRequired string `json:"gateRequired,omitempty"`
	// Canary is the cluster whose canary node(s) must be seen waiting for
	// approval first (read from the cluster when the command runs).
	Canary string `json:"canary,omitempty"`
	// Warnings are what the command would warn about, e.g. a downgrade.
	Warnings []string `json:"warnings,omitempty"`
	// Removals are the operators the step would take off clusters that
	// run them now.
	Removals []Removal `json:"removals,omitempty"`
	// Diffs are the rendered objects that change, each a unified diff.
	Diffs []ObjectDiff `json:"diffs"`
}

// MakePlan computes what m would do to the fleet f; ro, when set, gives
// render what it needs beyond the fleet file (see Options.Render).
func MakePlan(f *fleet.Fleet, m Mutation, ro func(*fleet.Fleet) (render.Options, error)) (*Plan, error) {
	step, newSrc, next, err := stepFleet(f, m)
	if err != nil {
		return nil, err
	}
	if f.Path != "" {
		// The refusal Apply would make, against the files beside the fleet.
		if err := checkActuators(filepath.Dir(f.Path), f, next, &step); err != nil {
			return nil, err
		}
	}
	// Only the clusters the step reaches: the others render the same.
	before, after, err := renderReached(f, next, ro)
	if err != nil {
		return nil, err
	}
	p := &Plan{Step: step, Summary: step.Summary, FleetLines: lineDiff(string(f.Source), string(newSrc)), Clusters: map[string][]string{}, Gate: step.Gate, GateRequired: step.GateRequired, Canary: step.Canary, Warnings: step.Warnings, Removals: step.Removals, Diffs: ObjectDiffs(before.Files, after.Files)}
	paths := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, o := range []*render.Output{before, after} {
			for k := range o.Files {
				if !seen[k] && !yield(k) {
					return
				}
				seen[k] = true
			}
		}
	})
	for _, file := range paths {
		oldSrc, newSrc := before.Files[file], after.Files[file]
		if string(oldSrc) == string(newSrc) || path.Base(file) == "kustomization.yaml" {
			continue
		}
		parts := strings.Split(file, "/")
		if len(parts) < 3 || parts[0] != "clusters" {
			continue
		}
		if path.Base(file) == render.ControllerFile {
			// Several objects in one file: say which changed, and how.
			p.Clusters[parts[1]] = append(p.Clusters[parts[1]], describeEach(oldSrc, newSrc)...)
		} else if change := describe(oldSrc, newSrc); change != "" {
			p.Clusters[parts[1]] = append(p.Clusters[parts[1]], change)
		}
	}
	return p, nil
}

// lineDiff lists removed then added lines between two versions of a file
// whose edits replace, add or delete whole lines.
func lineDiff(a, b string) []string {
	// Lines are compared and shown without their ending, LF or CRLF.
	a, b = strings.ReplaceAll(a, "\r\n", "\n"), strings.ReplaceAll(b, "\r\n", "\n")
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	count := map[string]int{}
	for _, l := range bl {
		count[l]++
	}
	var out []string
	for _, l := range al {
		if count[l] > 0 {
			count[l]--
			continue
		}
		out = append(out, "-"+l)
	}
	count = map[string]int{}
	for _, l := range al {
		count[l]++
	}
	for _, l := range bl {
		if count[l] > 0 {
			count[l]--
			continue
		}
		out = append(out, "+"+l)
	}
	return out
}

type objectView struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Chart *struct {
			Spec struct {
				Version string `json:"version"`
			} `json:"spec"`
		} `json:"chart"`
		// Template is a Deployment's pod template: its images.
		Template struct {
			Spec struct {
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
		// OFEDDriver is a NicClusterPolicy's OFED (DOCA) driver.
		OFEDDriver *struct {
			Version string `json:"version"`
		} `json:"ofedDriver"`
		TargetVersion   string `json:"targetVersion"`
		PreviousVersion string `json:"previousVersion"`
		Approval        string `json:"approval"`
		Paused          bool   `json:"paused"`
		Abort           bool   `json:"abort"`
	} `json:"spec"`
}

// describe says how a rendered object changes, e.g.
// "HelmRelease gpu-operator v25.3.4 → v25.10.1".
func describe(oldSrc, newSrc []byte) string {
	var o, n objectView
	_ = yaml.Unmarshal(oldSrc, &o)
	_ = yaml.Unmarshal(newSrc, &n)
	switch {
	case oldSrc == nil:
		return fmt.Sprintf("+ %s %s", n.Kind, n.Metadata.Name)
	case newSrc == nil:
		return fmt.Sprintf("- %s %s", o.Kind, o.Metadata.Name)
	}
	var what []string
	if o.Spec.Chart != nil && n.Spec.Chart != nil && o.Spec.Chart.Spec.Version != n.Spec.Chart.Spec.Version {
		what = append(what, o.Spec.Chart.Spec.Version+" → "+n.Spec.Chart.Spec.Version)
	}
	if o.Metadata.Name != n.Metadata.Name {
		what = append(what, "name "+o.Metadata.Name+" → "+n.Metadata.Name)
	}
	if oi, ni := images(o), images(n); oi != ni {
		what = append(what, "image "+oi+" → "+ni)
	}
	if o.Spec.OFEDDriver != nil && n.Spec.OFEDDriver != nil && o.Spec.OFEDDriver.Version != n.Spec.OFEDDriver.Version {
		what = append(what, "OFED driver "+o.Spec.OFEDDriver.Version+" → "+n.Spec.OFEDDriver.Version)
	}
	if o.Spec.TargetVersion != n.Spec.TargetVersion {
		what = append(what, "driver "+o.Spec.TargetVersion+" → "+n.Spec.TargetVersion)
	}
	for _, f := range []struct {
		name     string
		old, new bool
	}{{"approved", o.Spec.Approval != "", n.Spec.Approval != ""}, {"paused", o.Spec.Paused, n.Spec.Paused}, {"abort", o.Spec.Abort, n.Spec.Abort}} {
		if f.old != f.new {
			what = append(what, fmt.Sprintf("%s %t → %t", f.name, f.old, f.new))
		}
	}
	if len(what) == 0 {
		what = []string{"changed"}
	}
	return fmt.Sprintf("~ %s %s: %s", n.Kind, n.Metadata.Name, strings.Join(what, ", "))
}

// images are a Deployment's container images, joined.
func images(v objectView) string {
	var out []string
	for _, c := range v.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ", ")
}

// describeEach says how each object of a file of several changes (added,
// removed, or changed as describe says).
func describeEach(oldSrc, newSrc []byte) []string {
	var out []string
	olds := map[string]document{}
	for _, d := range documents(oldSrc) {
		olds[d.key()] = d
	}
	seen := map[string]bool{}
	for _, d := range documents(newSrc) {
		seen[d.key()] = true
		o, ok := olds[d.key()]
		switch {
		case !ok:
			out = append(out, describe(nil, []byte(d.text)))
		case o.text != d.text:
			out = append(out, describe([]byte(o.text), []byte(d.text)))
		}
	}
	for _, d := range documents(oldSrc) {
		if !seen[d.key()] {
			out = append(out, describe([]byte(d.text), nil))
		}
	}
	return out
}
