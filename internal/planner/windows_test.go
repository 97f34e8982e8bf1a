package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

func TestCalendarAllowed(t *testing.T) {
	utc := func(day, h, m int) time.Time { return time.Date(2026, 6, day, h, m, 0, 0, time.UTC) } // June 1 is a Monday
	freeze := utc(3, 0, 0)
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		at      time.Time
		want    bool
	}{
		{"no windows: always", pt.Rollout("r"), utc(1, 3, 0), true},
		{"inside a daily window", pt.Rollout("r").Window("09:00", "17:00", "UTC"), utc(1, 9, 0), true},
		{"end is exclusive", pt.Rollout("r").Window("09:00", "17:00", "UTC"), utc(1, 17, 0), false},
		{"before the window", pt.Rollout("r").Window("09:00", "17:00", "UTC"), utc(1, 8, 59), false},
		{"wrong day", pt.Rollout("r").Window("09:00", "17:00", "UTC", v1alpha1.Tuesday), utc(1, 10, 0), false},
		{"right day", pt.Rollout("r").Window("09:00", "17:00", "UTC", v1alpha1.Tuesday), utc(2, 10, 0), true},
		// Sat 22:00-06:00 crosses midnight and belongs to Saturday.
		{"crossing midnight: Saturday night", pt.Rollout("r").Window("22:00", "06:00", "UTC", v1alpha1.Saturday), utc(6, 23, 0), true},
		{"crossing midnight: Sunday morning", pt.Rollout("r").Window("22:00", "06:00", "UTC", v1alpha1.Saturday), utc(7, 5, 59), true},
		{"crossing midnight: Sunday night is not Saturday's", pt.Rollout("r").Window("22:00", "06:00", "UTC", v1alpha1.Saturday), utc(7, 23, 0), false},
		{"crossing midnight: Saturday morning is Friday's", pt.Rollout("r").Window("22:00", "06:00", "UTC", v1alpha1.Saturday), utc(6, 1, 0), false},
		// Paris is UTC+2 in June: 22:00 Paris is 20:00 UTC.
		{"time zone: open in Paris", pt.Rollout("r").Window("22:00", "23:00", "Europe/Paris"), utc(1, 20, 30), true},
		{"time zone: closed in Paris", pt.Rollout("r").Window("22:00", "23:00", "Europe/Paris"), utc(1, 22, 30), false},
		{"unknown time zone never opens", pt.Rollout("r").Window("00:00", "23:59", "Mars/Olympus"), utc(1, 12, 0), false},
		{"freeze beats the window", pt.Rollout("r").Freeze(freeze, freeze.Add(24*time.Hour), "x"), utc(3, 12, 0), false},
		{"freeze end is exclusive", pt.Rollout("r").Freeze(freeze, freeze.Add(24*time.Hour), "x"), utc(4, 0, 0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := tt.rollout.Build()
			got, _ := planner.NewCalendar(&ro.Spec).Allowed(tt.at)
			if got != tt.want {
				t.Errorf("Allowed(%s) = %t, want %t", tt.at.Format(time.RFC3339), got, tt.want)
			}
		})
	}
}

func TestCalendarNextAllowed(t *testing.T) {
	mon := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		rollout *pt.RolloutBuilder
		want    time.Time
	}{
		{"open now", pt.Rollout("r"), mon},
		{"tonight", pt.Rollout("r").Window("22:00", "06:00", "UTC"), time.Date(2026, 6, 1, 22, 0, 0, 0, time.UTC)},
		{"Saturday in Paris", pt.Rollout("r").Window("22:00", "06:00", "Europe/Paris", v1alpha1.Saturday), time.Date(2026, 6, 6, 20, 0, 0, 0, time.UTC)},
		{"after a freeze", pt.Rollout("r").Freeze(mon.Add(-time.Hour), mon.Add(5*time.Hour), "x"), mon.Add(5 * time.Hour)},
		{"first window after a freeze", pt.Rollout("r").Window("09:00", "12:00", "UTC").Freeze(mon.Add(-time.Hour), mon.Add(30*time.Hour), "x"),
			// The freeze ends Tuesday 16:00, after Tuesday's window.
			time.Date(2026, 6, 3, 9, 0, 0, 0, time.UTC)},
		// A two-week freeze from tomorrow over a Tue-Thu night window:
		// the first opening after it, Tuesday the 16th at 22:00, is past
		// the 15 days looked at from now, but not past 15 from the
		// freeze's end (found by the example's year-end freeze: no next
		// check at all, the rollout stuck).
		{"a window after a freeze that begins later", pt.Rollout("r").Window("22:00", "06:00", "UTC", v1alpha1.Tuesday, v1alpha1.Wednesday, v1alpha1.Thursday).
			Freeze(time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 16, 0, 0, 0, 0, time.UTC), "two weeks"),
			time.Date(2026, 6, 16, 22, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := tt.rollout.Build()
			got := planner.NewCalendar(&ro.Spec).NextAllowed(mon)
			if diff := cmp.Diff(tt.want.UTC(), got.UTC()); diff != "" {
				t.Errorf("NextAllowed (-want +got):\n%s", diff)
			}
		})
	}
}
