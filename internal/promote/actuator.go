package promote

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// checkActuators refuses a step whose one commit would also carry a change
// of the actuator of a cluster the step reaches, a change fleet.toml has
// but the rendered files in dir do not. Both directions hurt when they
// arrive together with a step: Flux applies the config step (the
// NVIDIADrivers, the operator's upgrade policy) before the lifecycle step
// (the DriverRollout), so on a switch to the gpu-operator actuator the
// operator upgrades nodes with no hold on them — no canary, no window —
// until the new DriverRollout's holds land; and a switch to the gpufleet
// actuator makes each NVIDIADriver select nodes by gpufleet.io/driver, which
// nodes on the operator's path need not carry. Rendered, committed and
// applied first, the switch finds the nodes held (or labelled) before any
// rollout moves them.
//
// A brake (pause, abort) is never refused: it goes through with a warning.
func checkActuators(dir string, f, next *fleet.Fleet, step *Step) error {
	var changed []string
	for _, name := range next.ClusterNames() {
		if render.SamePlan(f, next, name) {
			continue
		}
		was, err := renderedActuators(dir, name)
		if err != nil {
			return err
		}
		now := next.PolicyFor(name).Actuator
		for _, a := range was {
			if a != now {
				changed = append(changed, fmt.Sprintf("%s (rendered with %s, fleet.toml says %s)", name, a, now))
				break
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	what := "the actuator of " + strings.Join(changed, ", ") + " changes in this same commit"
	if braking(f, next) {
		step.Warnings = append(step.Warnings, what+": render and apply an actuator change on its own, between rollouts")
		return nil
	}
	return fmt.Errorf("%w: %s. Render the actuator change on its own first (gpufleet render, commit, and let Flux apply it: "+
		"on %s the nodes must be held by the skip label, on %s they must carry %s), then run this step again",
		ErrRefused, what, v1alpha1.ActuatorGPUOperator, v1alpha1.ActuatorGPUFleet, v1alpha1.LabelDriver)
}

// braking: the step pauses or aborts the promotion.
func braking(f, next *fleet.Fleet) bool {
	if next.Promotion.Paused && !f.Promotion.Paused {
		return true
	}
	r, was := next.Promotion.Rollout, f.Promotion.Rollout
	return r != nil && r.Aborted && (was == nil || !was.Aborted)
}

// renderedActuators reads the actuators of the DriverRollouts rendered for
// cluster in dir; none when the cluster was never rendered.
func renderedActuators(dir, cluster string) ([]v1alpha1.Actuator, error) {
	file := filepath.Join(dir, filepath.FromSlash(path.Join(render.ClusterDir(cluster), "lifecycle", "driverrollout.yaml")))
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.Actuator
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var obj struct {
			Kind string                     `json:"kind"`
			Spec v1alpha1.DriverRolloutSpec `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if obj.Kind == "DriverRollout" {
			out = append(out, v1alpha1.ActuatorOf(&obj.Spec))
		}
	}
	return out, nil
}
