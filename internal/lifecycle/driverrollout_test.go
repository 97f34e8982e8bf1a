package lifecycle

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

func TestDriverRolloutFor(t *testing.T) {
	freezeStart := time.Date(2026, 12, 20, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	freezeEnd := freezeStart.Add(14 * 24 * time.Hour)
	typeMeta := metav1.TypeMeta{APIVersion: "gpufleet.io/v1alpha1", Kind: "DriverRollout"}
	one := intstr.FromInt32(1)

	tests := []struct {
		name     string
		policy   fleet.Policy
		selector map[string]string
		want     v1alpha1.DriverRolloutSpec
	}{
		{
			name:     "zero policy gets the safe minimum",
			policy:   fleet.Policy{},
			selector: map[string]string{"gpufleet.io/pool": "h100"},
			want: v1alpha1.DriverRolloutSpec{
				TargetVersion:   "580.95.05",
				PreviousVersion: "570.172.08",
				NodeSelector:    metav1.LabelSelector{MatchLabels: map[string]string{"gpufleet.io/pool": "h100"}},
				Canary:          v1alpha1.CanarySpec{Count: new(int32(0))},
				ParallelNodes:   1,
				MaxUnavailable:  &one,
				Evict:           v1alpha1.EvictSpec{Mode: v1alpha1.EvictGPUPods},
			},
		},
		{
			name: "full policy",
			policy: fleet.Policy{
				CanaryNodes:       2,
				AutoApproveCanary: true,
				ParallelNodes:     4,
				MaxUnavailable:    fleet.Amount{Value: 10, Percent: true},
				Soak:              time.Hour,
				FailureBudget:     3,
				DrainTimeout:      30 * time.Minute,
				InstallTimeout:    20 * time.Minute,
				ValidateTimeout:   10 * time.Minute,
				Evict:             v1alpha1.EvictAll,
				GPUPodSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"uses": "nvidia-devices"}},
				WaitForPods:       &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}},
				WaitTimeout:       4 * time.Hour,
				Windows: []fleet.Window{{
					Days:  []time.Weekday{time.Saturday, time.Sunday},
					Start: "22:00", End: "06:00", TimeZone: "Europe/Paris",
				}},
				Freezes: []fleet.Freeze{{Start: freezeStart, End: freezeEnd, Reason: "year end"}},
				Health: fleet.Health{
					NodeConditions:  []string{"GpuXidError"},
					EventReasons:    []string{"XidError", "EccDoubleBitError"},
					PrometheusURL:   "http://prometheus.monitoring:9090",
					PrometheusQuery: `changes(DCGM_FI_DEV_XID_ERRORS{node="$node"}[1h])`,
				},
			},
			selector: map[string]string{"gpufleet.io/pool": "h100", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			want: v1alpha1.DriverRolloutSpec{
				TargetVersion:   "580.95.05",
				PreviousVersion: "570.172.08",
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{
					"gpufleet.io/pool": "h100", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
				}},
				Canary:         v1alpha1.CanarySpec{Count: new(int32(2)), AutoApproveAfterSoak: true},
				ParallelNodes:  4,
				MaxUnavailable: new(intstr.FromString("10%")),
				Windows: []v1alpha1.MaintenanceWindow{{
					Days:  []v1alpha1.Weekday{v1alpha1.Saturday, v1alpha1.Sunday},
					Start: "22:00", End: "06:00", TimeZone: "Europe/Paris",
				}},
				Freezes: []v1alpha1.FreezePeriod{{
					Start:  metav1.NewTime(freezeStart.UTC()),
					End:    metav1.NewTime(freezeEnd.UTC()),
					Reason: "year end",
				}},
				FailureBudget: 3,
				Soak:          metav1.Duration{Duration: time.Hour},
				Timeouts: v1alpha1.StepTimeouts{
					Drain:    metav1.Duration{Duration: 30 * time.Minute},
					Install:  metav1.Duration{Duration: 20 * time.Minute},
					Validate: metav1.Duration{Duration: 10 * time.Minute},
				},
				Evict: v1alpha1.EvictSpec{Mode: v1alpha1.EvictAll, GPUPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"uses": "nvidia-devices"}},
					WaitForCompletion: &v1alpha1.WaitForCompletion{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}, Timeout: metav1.Duration{Duration: 4 * time.Hour}}},
				Health: v1alpha1.HealthSources{
					NodeConditions: []string{"GpuXidError"},
					EventReasons:   []string{"XidError", "EccDoubleBitError"},
					Prometheus: &v1alpha1.PrometheusCheck{
						URL:   "http://prometheus.monitoring:9090",
						Query: `changes(DCGM_FI_DEV_XID_ERRORS{node="$node"}[1h])`,
					},
				},
			},
		},
		{
			name:     "count max unavailable",
			policy:   fleet.Policy{ParallelNodes: 2, MaxUnavailable: fleet.Amount{Value: 3}},
			selector: nil,
			want: v1alpha1.DriverRolloutSpec{
				TargetVersion:   "580.95.05",
				PreviousVersion: "570.172.08",
				Canary:          v1alpha1.CanarySpec{Count: new(int32(0))},
				ParallelNodes:   2,
				MaxUnavailable:  new(intstr.FromInt32(3)),
				Evict:           v1alpha1.EvictSpec{Mode: v1alpha1.EvictGPUPods},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DriverRolloutFor("r2026-08-h100", tt.policy, "580.95.05", "570.172.08", tt.selector)
			want := &v1alpha1.DriverRollout{
				TypeMeta:   typeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: "r2026-08-h100"},
				Spec:       tt.want,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("DriverRolloutFor() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDriverRolloutForDeterministic guards render's same-input-same-bytes
// promise: the object must marshal identically every time.
func TestDriverRolloutForDeterministic(t *testing.T) {
	p := fleet.Policy{CanaryNodes: 1, ParallelNodes: 2, MaxUnavailable: fleet.Amount{Value: 25, Percent: true}}
	sel := map[string]string{"b": "2", "a": "1", "c": "3"}
	first, err := json.Marshal(DriverRolloutFor("x", p, "580.95.05", "570.172.08", sel))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := json.Marshal(DriverRolloutFor("x", p, "580.95.05", "570.172.08", sel))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(first), string(again)); diff != "" {
			t.Fatalf("marshalled output changed (-first +again):\n%s", diff)
		}
	}
	// The selector is owned by the object: changing the input afterwards
	// must not change what was rendered.
	dr := DriverRolloutFor("x", p, "580.95.05", "570.172.08", sel)
	sel["a"] = "changed"
	if got := dr.Spec.NodeSelector.MatchLabels["a"]; got != "1" {
		t.Errorf("selector aliased the caller's map: a=%q", got)
	}
}
