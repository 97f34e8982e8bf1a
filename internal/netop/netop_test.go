package netop

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

func TestLook(t *testing.T) {
	const (
		req     = v1alpha1.OperatorStateUpgradeRequired
		cordon  = v1alpha1.OperatorStateCordonRequired
		restart = v1alpha1.OperatorStatePodRestartRequired
		done    = v1alpha1.OperatorStateDone
		failed  = v1alpha1.OperatorStateFailed
	)
	for _, tc := range []struct {
		name          string
		state         string
		current, held bool
		moves         []string
		replace       bool
	}{
		{"new node on the policy", "", true, false, []string{done}, false},
		{"required and already current", req, true, true, []string{done}, false},
		{"done and current stays", done, true, false, nil, false},
		{"out of date, held: required only", done, false, true, []string{req}, false},
		{"out of date, not held: replaced", done, false, false, []string{req, cordon, restart}, true},
		{"no state, out of date", "", false, false, []string{req, cordon, restart}, true},
		{"failed and out of date is taken again", failed, false, false, []string{req, cordon, restart}, true},
		{"failed on the policy stays failed", failed, true, false, nil, false},
		{"required, released", req, false, false, []string{cordon, restart}, true},
		{"required, held", req, false, true, nil, false},
		{"in progress: the pod moves it on", restart, false, false, nil, false},
		{"in progress, held again: goes on", restart, false, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moves, replace := Look(tc.state, tc.current, tc.held)
			if diff := cmp.Diff(tc.moves, moves); diff != "" || replace != tc.replace {
				t.Errorf("Look(%q, current=%v, held=%v) = %v, %v; want %v, %v", tc.state, tc.current, tc.held, moves, replace, tc.moves, tc.replace)
			}
		})
	}
}

// TestModelFollowsTheLibrarysOrder checks that one upgrade in the model
// passes the library's states in the library's order, and says which it
// passes over: with drain and pod deletion off and no validation, the
// library goes through them without stopping.
func TestModelFollowsTheLibrarysOrder(t *testing.T) {
	moves, replace := Look(v1alpha1.OperatorStateDone, false, false)
	if !replace {
		t.Fatal("an out-of-date node without the skip label is not replaced")
	}
	path := append(moves, Replaced(true)...)
	last := -1
	for _, s := range path {
		k := slices.Index(v1alpha1.OperatorStates, s)
		if k <= last {
			t.Fatalf("state %q out of the library's order in %v", s, path)
		}
		last = k
	}
	var over []string
	for _, s := range v1alpha1.OperatorStates[:last] {
		if !slices.Contains(path, s) {
			over = append(over, s)
		}
	}
	want := []string{v1alpha1.OperatorStateWaitForJobs, v1alpha1.OperatorStatePodDeletion, v1alpha1.OperatorStateDrainRequired, v1alpha1.OperatorStateValidation}
	if diff := cmp.Diff(want, over); diff != "" {
		t.Errorf("states passed over (-want +got):\n%s", diff)
	}
	if got := Replaced(false); !slices.Equal(got, []string{v1alpha1.OperatorStateFailed}) {
		t.Errorf("Replaced(false) = %v, want upgrade-failed", got)
	}
}

func TestWaitLabel(t *testing.T) {
	if WaitLabel(true) != "false" || WaitLabel(false) != "true" {
		t.Errorf("WaitLabel(true, false) = %q, %q; want false, true", WaitLabel(true), WaitLabel(false))
	}
}

func TestDriverStale(t *testing.T) {
	ready := time.Date(2026, 12, 6, 10, 0, 30, 500e6, time.UTC)
	for _, tc := range []struct {
		name    string
		started time.Time
		ready   time.Time
		want    bool
	}{
		{"started a second before", ready.Add(-time.Second), ready, true},
		{"started in the same second", ready.Add(-300 * time.Millisecond), ready, false},
		{"started after", ready.Add(time.Minute), ready, false},
		{"OFED never Ready", ready, time.Time{}, false},
		{"never started, OFED Ready", time.Time{}, ready, true},
	} {
		if got := DriverStale(tc.started, tc.ready); got != tc.want {
			t.Errorf("%s: DriverStale = %v, want %v", tc.name, got, tc.want)
		}
	}
}
