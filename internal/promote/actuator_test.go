package promote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
	"github.com/gpufleet/gpufleet/internal/render"
)

// switchActuator edits the example's [policy] to actuator a and commits
// fleet.toml alone, unrendered, as a person editing it by hand would.
func switchActuator(t *testing.T, path, a string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Without the OFED driver, which the gpu-operator actuator cannot move
	// with the example's managed NICs.
	noOFED := fleettest.WithoutOFEDDriver(string(src))
	out := strings.Replace(noOFED, "[policy]\n", "[policy]\nactuator = \""+a+"\"\n", 1)
	if out == noOFED {
		t.Fatal("the example has no [policy] table")
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, filepath.Dir(path), "commit", "-q", "-am", "switch the actuator to "+a)
}

// TestActuatorSwitchIsNotBundledWithAStep: a promotion step on clusters
// whose actuator changed in fleet.toml but not yet in the rendered files
// is refused (one commit would bring both, and Flux applies the new driver
// before the new DriverRollout's holds), and changes nothing; a brake goes
// through with a warning; once the switch is rendered and committed on its
// own, the step is taken.
func TestActuatorSwitchIsNotBundledWithAStep(t *testing.T) {
	for _, to := range []string{"gpu-operator", "gpufleet"} {
		t.Run("to "+to, func(t *testing.T) {
			path := fleetRepo(t)
			dir := filepath.Dir(path)
			if to == "gpufleet" {
				// Start from clusters rendered on the operator's path.
				switchActuator(t, path, "gpu-operator")
				renderCommit(t, path, "render the switch")
				src, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Replace(string(src), `actuator = "gpu-operator"`, `actuator = "gpufleet"`, 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				gitT(t, dir, "commit", "-q", "-am", "back to gpufleet")
			} else {
				switchActuator(t, path, to)
			}
			head := gitT(t, dir, "rev-parse", "HEAD")
			_, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR, Gate: (&fakeGate{}).check})
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "stg-h100 (rendered with") || !strings.Contains(err.Error(), "fleet.toml says "+to) {
				t.Fatalf("start with the switch unrendered: %v, want a refusal naming stg-h100 and %s", err, to)
			}
			if gitT(t, dir, "rev-parse", "HEAD") != head || gitT(t, dir, "status", "--porcelain") != "" {
				t.Fatal("the refused start changed the repository")
			}

			renderCommit(t, path, "render the switch")
			if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR, Gate: (&fakeGate{}).check}); err != nil {
				t.Fatalf("start once the switch is rendered: %v", err)
			}
		})
	}

	t.Run("a brake goes through", func(t *testing.T) {
		path := fleetRepo(t)
		if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR, Gate: (&fakeGate{}).check}); err != nil {
			t.Fatal(err)
		}
		switchActuator(t, path, "gpu-operator")
		res, err := Apply(t.Context(), Options{FleetFile: path, Mutation: Pause, Gate: (&fakeGate{}).check})
		if err != nil {
			t.Fatalf("pause with the switch unrendered: %v, want it taken", err)
		}
		if len(res.Step.Warnings) == 0 || !strings.Contains(strings.Join(res.Step.Warnings, "\n"), "stg-h100") {
			t.Errorf("pause: warnings %q, want the switch named", res.Step.Warnings)
		}
	})
}

// renderCommit renders the fleet at path into its folder and commits it
// all with msg; it returns the fleet.
func renderCommit(t *testing.T, path, msg string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.Write(out, filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	gitT(t, filepath.Dir(path), "add", "-A")
	gitT(t, filepath.Dir(path), "commit", "-q", "-m", msg)
	return f
}
