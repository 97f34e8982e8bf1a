package promote

import (
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
		was, ok, err := renderedActuator(dir, name)
		if err != nil {
			return err
		}
		if now := next.PolicyFor(name).Actuator; ok && was != now {
			changed = append(changed, fmt.Sprintf("%s (rendered with %s, fleet.toml says %s)", name, was, now))
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

// renderedActuator reads the actuator of the DriverRollout rendered for
// cluster in dir (render writes it alone in its file); ok is false when the
// cluster was never rendered.
func renderedActuator(dir, cluster string) (a v1alpha1.Actuator, ok bool, err error) {
	file := filepath.Join(dir, filepath.FromSlash(path.Join(render.ClusterDir(cluster), "lifecycle", "driverrollout.yaml")))
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var obj struct {
		Kind string                     `json:"kind"`
		Spec v1alpha1.DriverRolloutSpec `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return "", false, fmt.Errorf("%s: %w", file, err)
	}
	if obj.Kind != "DriverRollout" {
		return "", false, nil
	}
	return v1alpha1.ActuatorOf(&obj.Spec), true, nil
}
