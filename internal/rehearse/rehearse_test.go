package rehearse

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

var start = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)

func example(t *testing.T, p *fleet.Promotion) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		f = f.WithPromotion(*p)
	}
	return f
}

// TestRehearsesWhatRenderWrites is the class of issue 19: simulate built
// its own DriverRollout (its own name, no node selector, pre-approved). It
// rehearses the object render writes for the cluster, and that object's
// node selector picks the simulated nodes.
func TestRehearsesWhatRenderWrites(t *testing.T) {
	f := example(t, &fleet.Promotion{Stable: "r2026-06", Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "staging"}})
	rendered, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range f.ClusterNames() {
		var want v1alpha1.DriverRollout
		if err := yaml.Unmarshal(rendered.Files["clusters/"+cluster+"/lifecycle/driverrollout.yaml"], &want); err != nil {
			t.Fatal(err)
		}
		all, err := Options{Fleet: f, Cluster: cluster, Release: "r2026-10", Start: start, Seed: 1}.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r := all[0]
		if f.Touched(cluster) {
			if diff := cmp.Diff(&want, r.DriverRollout()); diff != "" {
				t.Errorf("%s: rehearsed rollout differs from the rendered one (-rendered +rehearsed):\n%s", cluster, diff)
			}
		} else if got, _ := render.DriverRollout(f, cluster, "r2026-10"); !cmp.Equal(got, r.DriverRollout()) {
			// Not reached yet: what render writes once it is.
			t.Errorf("%s: rehearsed rollout is not render's for r2026-10", cluster)
		}
		if r.Rollout != "r2026-10" || r.DriverRollout().Spec.Approval != want.Spec.Approval && f.Touched(cluster) {
			t.Errorf("%s: rehearsed %q (approval %q), want r2026-10 as rendered (approval %q)", cluster, r.Rollout, r.DriverRollout().Spec.Approval, want.Spec.Approval)
		}
		if r.Report.Done != r.Report.Nodes || r.Report.Nodes == 0 {
			t.Errorf("%s: %d of %d nodes done: the rendered node selector must pick the cluster's GPU nodes", cluster, r.Report.Done, r.Report.Nodes)
		}
	}
}

// TestRunInputErrors: what the caller asked for wrong is an *InputError
// (the command's usage error), with the message that says what to pass.
func TestRunInputErrors(t *testing.T) {
	stable := example(t, nil)
	rolling := example(t, &fleet.Promotion{Stable: "r2026-06", Rollout: &fleet.Rollout{Release: "r2026-10", Wave: "staging"}})
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"unknown cluster", Options{Fleet: rolling, Cluster: "nope"}, `no cluster "nope"`},
		{"unknown release", Options{Fleet: rolling, Release: "r1999"}, `no release "r1999"`},
		{"timeline of every cluster", Options{Fleet: rolling, Timeline: true}, "--svg draws one cluster"},
		{"nothing rolled out", Options{Fleet: stable}, "no release is being rolled out: pass --release"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Start, tt.o.Seed = start, 1
			_, err := tt.o.Run(t.Context())
			var input *InputError
			if !errors.As(err, &input) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an *InputError saying %q", err, tt.want)
			}
		})
	}
}

// TestRunDrillAndRates: a drill release fails every install unless a fail
// rate is given; same seed, same rehearsal.
func TestRunDrillAndRates(t *testing.T) {
	f := example(t, nil)
	o := Options{Fleet: f, Cluster: "stg-h100", Release: "r2026-10-drill", Start: start, Seed: 7}
	drill, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r := drill[0].Report; r.Failures == 0 || r.Done == r.Nodes {
		t.Errorf("drill: %d failures, %d of %d done; want the canary to fail", r.Failures, r.Done, r.Nodes)
	}
	o.FailRateSet = true
	clean, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r := clean[0].Report; r.Failures != 0 || r.Done != r.Nodes {
		t.Errorf("drill with --fail-rate 0: %d failures, %d of %d done; want all done", r.Failures, r.Done, r.Nodes)
	}
	again, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(clean[0].Report, again[0].Report); diff != "" {
		t.Errorf("same seed, another rehearsal (-first +second):\n%s", diff)
	}
	if err := Unfinished(clean); err != nil {
		t.Errorf("a finished rehearsal is unfinished: %v", err)
	}
}

func TestShortDuration(t *testing.T) {
	for in, want := range map[string]string{"0s": "0s", "30m": "30m", "2h": "2h", "2h30m": "2h30m", "49h": "2d1h", "48h": "2d", "50h10m": "2d2h10m"} {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %s, want %s", in, got, want)
		}
	}
}
