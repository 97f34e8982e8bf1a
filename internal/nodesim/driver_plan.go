package nodesim

import (
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// driverPod is what the driver planner needs to know of one driver pod.
type driverPod struct {
	name     string
	version  string
	started  time.Time // install start; zero when unknown
	ready    bool
	crashing bool
}

// driverPlan is what to do about one node's driver, with the reason.
type driverPlan struct {
	// remove are driver pods of other versions, which the DaemonSet's
	// rollout would delete.
	remove []string
	// create asks for a pod installing the wanted version.
	create bool
	// complete names the pod whose install finished well: make it Ready and
	// report its version in the node's labels.
	complete string
	// fail names the pod whose install failed: show it crash looping.
	fail   string
	reason string
}

// planDriver decides what the driver DaemonSet does on a node that wants
// version want, given its driver pods. It is pure: now and the install time
// decide when an install ends, and bad says which versions fail.
func planDriver(want string, pods []driverPod, now time.Time, install time.Duration, bad func(string) bool) driverPlan {
	var p driverPlan
	var current *driverPod
	for i := range pods {
		if pods[i].version == want && current == nil {
			current = &pods[i]
			continue
		}
		p.remove = append(p.remove, pods[i].name)
	}
	switch {
	case want == "":
		p.reason = "node has no " + v1alpha1.LabelDriver + " label: nothing to install"
	case current == nil:
		p.create = true
		p.reason = "driver " + want + " wanted and no pod installs it: start installing"
	case current.ready || current.crashing:
		p.reason = "driver " + want + " install already finished"
	case now.Sub(current.started) < install:
		p.reason = "driver " + want + " installing"
	case bad(want):
		p.fail = current.name
		p.reason = "driver " + want + " is marked bad: install fails"
	default:
		p.complete = current.name
		p.reason = "driver " + want + " installed"
	}
	return p
}
