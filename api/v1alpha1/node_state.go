package v1alpha1

import "time"

// NodeState is the progress a rollout keeps on a node, as it is written in
// the node's labels and annotations (LabelRollout, LabelPhase,
// AnnotationSince, AnnotationFailed, AnnotationAdminCordoned). NodeStateOf
// and Encode are the one reading and the one writing of it: the controller
// writes a transition with Encode and reads a node back with NodeStateOf,
// so a restarted controller rebuilds exactly what it wrote, and the
// simulator and the tests use the same pair.
//
// What a transition changes in it is the planner's rule
// (planner.Transition.Next), not this type's.
//
// +kubebuilder:object:generate=false
type NodeState struct {
	// Rollout is the DriverRollout the node belongs to; empty: none.
	Rollout string
	// Phase is the node's phase in that rollout; empty: not started
	// (Pending).
	Phase NodePhase
	// Since is when the node entered Phase; zero when it is not recorded
	// or cannot be read.
	Since time.Time
	// Failed: the node failed in its rollout (it counts against that
	// rollout's failure budget).
	Failed bool
	// AdminCordoned: someone other than gpufleet holds the node's cordon.
	AdminCordoned bool
}

// marked is the value of a flag annotation that is set.
const marked = "true"

// NodeStateOf reads the state recorded in a node's labels and annotations
// (either may be nil). A flag annotation counts only when it says "true".
func NodeStateOf(labels, annotations map[string]string) NodeState {
	s := NodeState{
		Rollout:       labels[LabelRollout],
		Phase:         NodePhase(labels[LabelPhase]),
		Failed:        annotations[AnnotationFailed] == marked,
		AdminCordoned: annotations[AnnotationAdminCordoned] == marked,
	}
	if v, ok := annotations[AnnotationSince]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			s.Since = t
		}
	}
	return s
}

// Encode writes s into a node's labels and annotations, which must not be
// nil: each key of a field that is set gets its value, and each key of a
// field left zero is removed, so that what NodeStateOf reads back equals s
// (Since to the nanosecond, in UTC). Keys gpufleet does not own are left
// alone.
func (s NodeState) Encode(labels, annotations map[string]string) {
	set := func(m map[string]string, key, value string) {
		if value == "" {
			delete(m, key)
			return
		}
		m[key] = value
	}
	flag := func(b bool) string {
		if b {
			return marked
		}
		return ""
	}
	set(labels, LabelRollout, s.Rollout)
	set(labels, LabelPhase, string(s.Phase))
	since := ""
	if !s.Since.IsZero() {
		since = s.Since.UTC().Format(time.RFC3339Nano)
	}
	set(annotations, AnnotationSince, since)
	set(annotations, AnnotationFailed, flag(s.Failed))
	set(annotations, AnnotationAdminCordoned, flag(s.AdminCordoned))
}
