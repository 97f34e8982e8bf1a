package nodesimtest

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// swap is a sound swap from 580.82.07 to 580.95.05 as a recorder samples
// it; sample 1 read the claims just before the plugin was paused (its
// After reading), as a slow sample on a busy machine does.
func swap() []DRASample {
	const old, target = "580.82.07", "580.95.05"
	paused := v1alpha1.DRAPluginPaused
	l := func(phase, driver, plugin string) NodeLabels {
		return NodeLabels{Phase: phase, Driver: driver, Plugin: plugin}
	}
	return []DRASample{
		{Before: l("Draining", old, ""), After: l("Draining", old, ""), ClaimsHeld: []string{"ml/train-gpu"}, PluginRunning: true, PluginReady: true, Slices: []string{"580.82.7"}},
		{Before: l("Draining", old, ""), After: l("Draining", old, paused), ClaimsHeld: []string{"ml/train-gpu"}, PluginRunning: true, PluginReady: true, Slices: []string{"580.82.7"}},
		{Before: l("Draining", old, paused), After: l("Draining", old, paused), PluginRunning: true, Slices: []string{"580.82.7"}},
		{Before: l("Draining", old, paused), After: l("Installing", target, paused)},
		{Before: l("Installing", target, paused), After: l("Installing", target, paused)},
		{Before: l("Validating", target, v1alpha1.DRAPluginResumed), After: l("Validating", target, v1alpha1.DRAPluginResumed), PluginRunning: true, PluginReady: true, Slices: []string{"580.95.5"}},
		{Before: l("Validating", target, v1alpha1.DRAPluginResumed), After: l("Done", target, "")},
		{Before: l("Done", target, ""), After: l("Done", target, ""), PluginRunning: true, PluginReady: true, Slices: []string{"580.95.5"}},
	}
}

func TestSwapOrderProblems(t *testing.T) {
	cases := []struct {
		name string
		edit func(s []DRASample) []DRASample
		want string // a problem's words; empty: none
	}{
		{"a sound swap, claims read just before the pause", func(s []DRASample) []DRASample { return s }, ""},
		{"a claim held after the pause was read", func(s []DRASample) []DRASample {
			s[2].ClaimsHeld = []string{"ml/train-gpu"}
			return s
		}, "stopped while claims [ml/train-gpu] were held"},
		{"the plugin still running after the label moved", func(s []DRASample) []DRASample {
			s[4].PluginRunning = true
			return s
		}, "the driver label moved with the plugin running true"},
		{"the plugin paused after the label moved", func(s []DRASample) []DRASample {
			for i := range s[:4] {
				s[i].Before.Plugin, s[i].After.Plugin = "", ""
			}
			s[3].After.Plugin = ""
			s[4].Before.Plugin = ""
			return s
		}, "paused (reading 9) after the driver label moved (reading 7)"},
		{"Done before the slices moved", func(s []DRASample) []DRASample {
			s[7].Slices = []string{"580.82.7"}
			return s
		}, "at Done: plugin Ready true, slices [580.82.7]"},
		{"the plugin running again by a rollback's pause is not the swap's", func(s []DRASample) []DRASample {
			return append(s, DRASample{Before: NodeLabels{"RollingBack", "580.95.05", v1alpha1.DRAPluginPaused}, After: NodeLabels{"RollingBack", "580.95.05", v1alpha1.DRAPluginPaused}, PluginRunning: true})
		}, ""},
		{"no pause seen", func(s []DRASample) []DRASample {
			for i := range s {
				s[i].Before.Plugin, s[i].After.Plugin = "", ""
			}
			return s
		}, "the plugin paused at reading -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SwapOrderProblems(c.edit(swap()), "580.95.05")
			if c.want == "" {
				if len(got) > 0 {
					t.Errorf("problems %q, want none", got)
				}
				return
			}
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("problems %q, want one saying %q", got, c.want)
			}
		})
	}
}
