// Package admissiontest holds the cases the node admission policy is held
// to, one table for the tests that evaluate its CEL in process and for the
// test that applies the rendered policy to a real API server: every label
// of v1alpha1.ControllerNodeLabels added, changed or removed, and a node
// created carrying it, by the controller and by someone else, with the
// exceptions each label allows, and labels nobody guards.
package admissiontest

import (
	"fmt"
	"maps"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// NodeCase is one request on a node's labels.
type NodeCase struct {
	Name string
	// Controller: the request is gpufleet-controller's service account's;
	// otherwise someone else's (an admin, a node template, a tool).
	Controller bool
	// Before are the node's labels before the request; nil: the request
	// creates the node.
	Before map[string]string
	// After are the node's labels the request asks for.
	After map[string]string
	// Refused is a part of the refusal's message; empty: allowed.
	Refused string
}

// Running is the driver the cases' nodes report running (GPU Feature
// Discovery's labels); Other is another.
const (
	Running       = "570.172.08"
	RunningBranch = "570"
	Other         = "580.95.05"
)

// reported are the labels GFD puts on a node that runs Running.
func reported() map[string]string {
	return map[string]string{
		v1alpha1.LabelGFDDriverFull:  Running,
		v1alpha1.LabelGFDDriverMajor: RunningBranch,
		"kubernetes.io/os":           "linux",
	}
}

// with is m with the key-value pairs kv set ("" as a value removes the key).
func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

// values are, per label, what a node carries before a change and what the
// change writes: neither the driver the node reports, so that no
// exception lets a change of gpufleet.io/driver through by accident.
func values(key string) (before, after string) {
	switch key {
	case v1alpha1.LabelDriver:
		return "550.54.15", Other
	case v1alpha1.LabelPhase:
		return string(v1alpha1.NodeSoaking), string(v1alpha1.NodeDone)
	case v1alpha1.LabelQuarantined:
		return "true", "false"
	}
	return "a", "b"
}

// NodeCases are every case, named for test output.
func NodeCases() []NodeCase {
	var cases []NodeCase
	who := map[bool]string{true: "the controller", false: "someone else"}
	for _, l := range v1alpha1.ControllerNodeLabels {
		k := l.Key
		was, now := values(k)
		base := reported()
		carrying := with(base, k, was)
		refusal := "may not write node label " + k
		for _, controller := range []bool{false, true} {
			refused := func(allowed bool) string {
				if controller || allowed {
					return ""
				}
				return refusal
			}
			add := func(name string, before, after map[string]string, refused string) {
				cases = append(cases, NodeCase{Name: fmt.Sprintf("%s %s %s", who[controller], name, k), Controller: controller, Before: before, After: after, Refused: refused})
			}
			add("creates a node carrying", nil, with(base, k, now), refused(false))
			add("adds", base, with(base, k, now), refused(false))
			change := refused(false)
			if k == v1alpha1.LabelRollout {
				// Nobody moves a node from one rollout to another.
				change = "never moved to " + now
			}
			add("changes", carrying, with(carrying, k, now), change)
			add("removes", carrying, with(carrying, k, ""), refused(l.OthersMayRemove))
			add("changes another label of a node carrying", carrying, with(carrying, "example.com/rack", "r7"), "")
			if l.OthersMayRecordDriver {
				add("creates a node, recording the driver it reports, in", nil, with(base, k, Running), "")
				add("records the driver the node reports in", base, with(base, k, Running), "")
				add("records the driver branch the node reports in", carrying, with(carrying, k, RunningBranch), "")
				// What the node reported before the request counts, not
				// what the request says it reports.
				add("sets the driver and what the node reports together in", carrying, with(carrying, k, Other, v1alpha1.LabelGFDDriverFull, Other), refused(false))
			}
		}
	}
	// The decisions docs/security.md states, written out rather than
	// derived from ControllerNodeLabels, so that a change to that list
	// that undoes one fails here.
	refused := func(k string) string { return "may not write node label " + k }
	phase, driver, quarantined := v1alpha1.LabelPhase, v1alpha1.LabelDriver, v1alpha1.LabelQuarantined
	cases = append(cases,
		NodeCase{Name: "stated: someone else removes the quarantine label", Before: with(reported(), quarantined, "true"), After: reported()},
		NodeCase{Name: "stated: someone else quarantines a node", Before: reported(), After: with(reported(), quarantined, "true"), Refused: refused(quarantined)},
		NodeCase{Name: "stated: someone else removes the phase", Before: with(reported(), phase, "Done"), After: reported(), Refused: refused(phase)},
		NodeCase{Name: "stated: someone else labels a node with the driver it runs", Before: reported(), After: with(reported(), driver, Running)},
		NodeCase{Name: "stated: someone else moves a node to another driver", Before: with(reported(), driver, Running), After: with(reported(), driver, Other), Refused: refused(driver)},
		NodeCase{Name: "stated: someone else removes the driver label", Before: with(reported(), driver, Running), After: reported(), Refused: refused(driver)},
		NodeCase{Name: "stated: someone else labels a node's pool", Before: reported(), After: with(reported(), v1alpha1.LabelPool, "h100")},
	)
	// Labels nobody guards: the pool (people and node templates set it),
	// and everyone else's.
	for _, k := range append([]string{"example.com/rack", "gpufleet.io/remediation"}, v1alpha1.PeopleNodeLabels...) {
		cases = append(cases,
			NodeCase{Name: "someone else creates a node carrying " + k, After: with(reported(), k, "a")},
			NodeCase{Name: "someone else adds " + k, Before: reported(), After: with(reported(), k, "a")},
			NodeCase{Name: "someone else changes " + k, Before: with(reported(), k, "a"), After: with(reported(), k, "b")},
			NodeCase{Name: "someone else removes " + k, Before: with(reported(), k, "a"), After: reported()},
		)
	}
	return cases
}
