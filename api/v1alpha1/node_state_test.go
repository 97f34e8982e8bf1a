package v1alpha1

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNodeStateRoundTrip: what Encode writes, NodeStateOf reads back, and
// the keys of a field left zero are gone, whatever the node carried before;
// labels and annotations gpufleet does not own are left alone.
func TestNodeStateRoundTrip(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 3, 2, 22, 15, 4, 123456789, paris)
	states := map[string]NodeState{
		"untouched":        {},
		"taken, pending":   {Rollout: "r1", Phase: NodePending, Since: since},
		"soaking":          {Rollout: "r1", Phase: NodeSoaking, Since: since},
		"failed, rolled":   {Rollout: "r1", Phase: NodeRolledBack, Since: since, Failed: true},
		"admin cordon":     {Rollout: "r2", Phase: NodeDone, Since: since, AdminCordoned: true},
		"released, marked": {AdminCordoned: true},
	}
	full := func() (map[string]string, map[string]string) {
		return map[string]string{LabelRollout: "old", LabelPhase: string(NodeQuarantined), LabelPool: "h100", "team": "ml"},
			map[string]string{AnnotationSince: "2020-01-01T00:00:00Z", AnnotationFailed: "true", AnnotationAdminCordoned: "true", "note": "kept"}
	}
	for name, want := range states {
		t.Run(name, func(t *testing.T) {
			for _, start := range []string{"bare", "full"} {
				labels, annotations := map[string]string{}, map[string]string{}
				if start == "full" {
					labels, annotations = full()
				}
				want.Encode(labels, annotations)
				got := NodeStateOf(labels, annotations)
				if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
					t.Errorf("from a %s node (-encoded +decoded):\n%s", start, diff)
				}
				// Encoding what was read changes nothing: one reading, one writing.
				l2, a2 := maps.Clone(labels), maps.Clone(annotations)
				got.Encode(l2, a2)
				if !maps.Equal(l2, labels) || !maps.Equal(a2, annotations) {
					t.Errorf("from a %s node: re-encoding changed %v %v into %v %v", start, labels, annotations, l2, a2)
				}
				if start == "full" && (labels[LabelPool] != "h100" || labels["team"] != "ml" || annotations["note"] != "kept") {
					t.Errorf("keys gpufleet does not own were touched: %v %v", labels, annotations)
				}
				if want.Rollout == "" {
					if _, ok := labels[LabelRollout]; ok {
						t.Errorf("a node of no rollout keeps %s", LabelRollout)
					}
				}
			}
		})
	}
}

// TestNodeStateOfWhatOthersWrote: only "true" sets a flag, and a since that
// cannot be read is zero (the controller then starts the phase's clock).
func TestNodeStateOfWhatOthersWrote(t *testing.T) {
	got := NodeStateOf(
		map[string]string{LabelRollout: "r1", LabelPhase: "Draining"},
		map[string]string{AnnotationSince: "yesterday", AnnotationFailed: "yes", AnnotationAdminCordoned: "True"},
	)
	if diff := cmp.Diff(NodeState{Rollout: "r1", Phase: NodeDraining}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(NodeState{}, NodeStateOf(nil, nil)); diff != "" {
		t.Errorf("nil maps (-want +got):\n%s", diff)
	}
}

// TestNodeStateEncodesUTC: since is written in UTC to the nanosecond, as
// the controller always wrote it.
func TestNodeStateEncodesUTC(t *testing.T) {
	l, a := map[string]string{}, map[string]string{}
	at := time.Date(2026, 3, 2, 23, 0, 0, 5, time.FixedZone("CET", 3600))
	NodeState{Rollout: "r", Phase: NodeDraining, Since: at}.Encode(l, a)
	if got, want := a[AnnotationSince], "2026-03-02T22:00:00.000000005Z"; got != want {
		t.Errorf("since written as %q, want %q", got, want)
	}
}

// TestNodePhasePredicates pins which phases hold a slot and a cordon: the
// planner, the simulator, gate and explain all ask these methods.
func TestNodePhasePredicates(t *testing.T) {
	for _, tt := range []struct {
		p                 NodePhase
		inFlight, cordons bool
	}{
		{"", false, false},
		{NodePending, false, false},
		{NodeDraining, true, true},
		{NodeInstalling, true, true},
		{NodeValidating, true, true},
		{NodeSoaking, true, true},
		{NodeDone, false, false},
		{NodeRollingBack, true, true},
		{NodeRolledBack, false, false},
		{NodeQuarantined, false, true},
	} {
		if got := tt.p.InFlight(); got != tt.inFlight {
			t.Errorf("%q.InFlight() = %t, want %t", tt.p, got, tt.inFlight)
		}
		if got := tt.p.HoldsCordon(); got != tt.cordons {
			t.Errorf("%q.HoldsCordon() = %t, want %t", tt.p, got, tt.cordons)
		}
	}
	if NodePhase("").OrPending() != NodePending || NodeDone.OrPending() != NodeDone {
		t.Error("OrPending maps only the empty phase to Pending")
	}
}
