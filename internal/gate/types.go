package gate

import (
	"time"
)

// Status of one check.
type Status string

// Statuses. Unknown means the gate could not find out, which fails it too.
const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Unknown Status = "unknown"
)

// Check is one thing the gate verified on a cluster.
type Check struct {
	Cluster string `json:"cluster"`
	// Name says what was checked: its kind and object, written as the
	// check's name, e.g. "flux/Kustomization/operators".
	Name     CheckID `json:"name"`
	Status   Status  `json:"status"`
	Expected string  `json:"expected"`
	Observed string  `json:"observed"`
	Message  string  `json:"message,omitempty"`
}

// Report is the gate's verdict on a set of clusters.
type Report struct {
	Revision string        `json:"revision"`
	Clusters []string      `json:"clusters"`
	Checks   []Check       `json:"checks"`
	Took     time.Duration `json:"took"`
	// Adoption is where each cluster read stands in coming under gpufleet
	// (AdoptionOf), by cluster; `gpufleet status --live` shows it. The
	// gate's own document leaves it out: its checks say the same per pool.
	Adoption map[string]Adoption `json:"-"`
}

// Verdict sums the report up: Fail if any check failed, else Unknown if any
// could not be made, else Pass.
func (r *Report) Verdict() Status {
	v := Pass
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			return Fail
		case Unknown:
			v = Unknown
		}
	}
	if len(r.Checks) == 0 {
		return Unknown
	}
	return v
}

// Failed returns the checks that did not pass.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status != Pass {
			out = append(out, c)
		}
	}
	return out
}
