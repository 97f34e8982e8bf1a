package lifecycle

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// DriverRolloutFor returns the DriverRollout that rolls driver version target
// over the nodes matching selector, with previous as the rollback version,
// under policy p. The result is deterministic (same input, same object, same
// bytes once marshalled) because render's output is compared with Git:
// lists keep the fleet file's order, which is already fixed, and the
// selector is a map that encoding/json writes sorted.
//
// Approval is left empty: approving is a separate one-line edit that must
// name the rollout, and render must not approve anything by itself.
func DriverRolloutFor(name string, p fleet.Policy, target, previous string, selector map[string]string) *v1alpha1.DriverRollout {
	dr := &v1alpha1.DriverRollout{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1alpha1.GroupVersion.String(),
			Kind:       v1alpha1.KindDriverRollout,
		},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion:   target,
			PreviousVersion: previous,
			NodeSelector:    metav1.LabelSelector{MatchLabels: cloneMap(selector)},
			Canary: v1alpha1.CanarySpec{
				Count:                new(int32(p.CanaryNodes)),
				AutoApproveAfterSoak: p.AutoApproveCanary,
			},
			ParallelNodes:  int32(max(p.ParallelNodes, v1alpha1.DefaultParallelNodes)),
			MaxUnavailable: amount(p.MaxUnavailable),
			FailureBudget:  int32(p.FailureBudget),
			Soak:           duration(p.Soak),
			Timeouts: v1alpha1.StepTimeouts{
				Drain:    duration(p.DrainTimeout),
				Install:  duration(p.InstallTimeout),
				Validate: duration(p.ValidateTimeout),
			},
			Health: health(p.Health),
			Evict:  v1alpha1.EvictSpec{Mode: evictMode(p.Evict), GPUPodSelector: p.GPUPodSelector.DeepCopy(), WaitForCompletion: waitFor(p)},
			DRA:    v1alpha1.DRASpec{Drivers: slices.Clone(p.DRADrivers), KubeletPluginSelector: p.DRAPluginSelector.DeepCopy()},
		},
	}
	if p.MaintenanceDomain != "" && p.DomainSize > 0 {
		dr.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: p.MaintenanceDomain, MaxNodes: int32(p.DomainSize)}
	}
	for _, w := range p.Windows {
		dr.Spec.Windows = append(dr.Spec.Windows, v1alpha1.MaintenanceWindow{
			Days:     weekdays(w.Days),
			Start:    w.Start,
			End:      w.End,
			TimeZone: w.TimeZone,
		})
	}
	for _, f := range p.Freezes {
		dr.Spec.Freezes = append(dr.Spec.Freezes, v1alpha1.FreezePeriod{
			// UTC so the rendered bytes do not depend on the zone the fleet
			// file happened to write the timestamp in.
			Start:  metav1.NewTime(f.Start.UTC()),
			End:    metav1.NewTime(f.End.UTC()),
			Reason: f.Reason,
		})
	}
	return dr
}

// evictMode is the policy's evict mode, the API's default when unset, so
// the rendered object says what a drain evicts.
func evictMode(m v1alpha1.EvictMode) v1alpha1.EvictMode {
	if m == "" {
		return v1alpha1.DefaultEvictMode
	}
	return m
}

// waitFor is the policy's wait for jobs; nil when it names none.
func waitFor(p fleet.Policy) *v1alpha1.WaitForCompletion {
	if p.WaitForPods == nil || p.WaitTimeout <= 0 {
		return nil
	}
	return &v1alpha1.WaitForCompletion{PodSelector: *p.WaitForPods.DeepCopy(), Timeout: duration(p.WaitTimeout)}
}

// amount converts a count or percentage; zero (unset) is written as the
// API's default, so the rendered object says what the rollout will do.
func amount(a fleet.Amount) *intstr.IntOrString {
	if v := a.IntOrString(); v != nil {
		return v
	}
	v := intstr.FromInt32(v1alpha1.DefaultMaxUnavailable)
	return &v
}

func health(h fleet.Health) v1alpha1.HealthSources {
	out := v1alpha1.HealthSources{
		NodeConditions: slices.Clone(h.NodeConditions),
		EventReasons:   slices.Clone(h.EventReasons),
	}
	if h.PrometheusURL != "" {
		out.Prometheus = &v1alpha1.PrometheusCheck{URL: h.PrometheusURL, Query: h.PrometheusQuery}
	}
	return out
}

var weekdayNames = [...]v1alpha1.Weekday{
	time.Sunday:    v1alpha1.Sunday,
	time.Monday:    v1alpha1.Monday,
	time.Tuesday:   v1alpha1.Tuesday,
	time.Wednesday: v1alpha1.Wednesday,
	time.Thursday:  v1alpha1.Thursday,
	time.Friday:    v1alpha1.Friday,
	time.Saturday:  v1alpha1.Saturday,
}

func weekdays(days []time.Weekday) []v1alpha1.Weekday {
	if len(days) == 0 {
		return nil
	}
	out := make([]v1alpha1.Weekday, 0, len(days))
	for _, d := range days {
		out = append(out, weekdayNames[d])
	}
	return out
}

// duration leaves zero durations unset so the schema's defaults apply.
func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}
