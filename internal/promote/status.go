package promote

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// Status is where the promotion stands, for `gpufleet status`.
type Status struct {
	Stable   string          `json:"stable"`
	Rollout  string          `json:"rollout,omitempty"`
	Clusters []ClusterStatus `json:"clusters"`
	Waiting  []string        `json:"waiting,omitempty"`
	// Services says where each service of the serving stack runs (see
	// fleet.Fits), in dependency order.
	Services []ServicePlacement `json:"services,omitempty"`
	// Next is the exact next command.
	Next string `json:"next"`
	Live bool   `json:"live"`
	// Notices are what the repository still lacks, each with the command
	// that fixes it (the push webhook's token); the CLI fills them, as
	// they come from the repository, not the fleet file.
	Notices []string `json:"notices,omitempty"`
}

// ClusterStatus is one cluster's line.
type ClusterStatus struct {
	Wave    string `json:"wave"`
	Cluster string `json:"cluster"`
	Release string `json:"release"`
	State   string `json:"state"`
	Gate    string `json:"gate,omitempty"`
	// Lifecycle is the cluster's DriverRollout as the gate found it: its
	// phase, nodes done and failure budget used, e.g. "CompletedWithFailures,
	// 23/24 done, budget used 1 of 2" (a node rolled back).
	Lifecycle string `json:"lifecycle,omitempty"`
	// Adoption is where the cluster stands in coming under gpufleet, as
	// the gate read it (live only): who runs its GPU driver, by the fleet
	// file and by its ClusterPolicy, and how many of its GPU nodes are
	// under gpufleet (labelled on gpufleet's actuator, held on the
	// operator's) of how many.
	Adoption *gate.Adoption `json:"adoption,omitempty"`
}

// ServicePlacement is one service and the clusters it runs on.
type ServicePlacement struct {
	Service  string   `json:"service"`
	Clusters []string `json:"clusters"`
}

// servicePlacements lists where each service runs, over every environment.
func servicePlacements(f *fleet.Fleet) []ServicePlacement {
	if f.Stack == nil {
		return nil
	}
	var out []ServicePlacement
	for _, svc := range f.Stack.ServiceNames() {
		sp := ServicePlacement{Service: svc}
		for _, env := range f.Environments() {
			sp.Clusters = append(sp.Clusters, f.ServiceClusters(svc, env)...)
		}
		out = append(out, sp)
	}
	return out
}

// StatusOf summarises the fleet file's promotion state.
func StatusOf(f *fleet.Fleet) *Status {
	p := f.Promotion
	st := &Status{Stable: p.Stable}
	if r := p.Rollout; r != nil {
		st.Rollout = fmt.Sprintf("%s at wave %s", r.Release, r.Wave)
		if r.Stage == fleet.StageCanary {
			st.Rollout += " (canary cluster only)"
		}
		if r.Aborted {
			st.Rollout = fmt.Sprintf("%s ABORTED at wave %s: clusters return to %s; the abort stays in force, and nothing can start, until the gate sees %s back", r.Release, r.Wave, p.Stable, strings.Join(touchedClusters(f, p), ", "))
		} else if p.Paused {
			st.Rollout += ", PAUSED"
		}
	}
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			cs := ClusterStatus{Wave: w.Name, Cluster: c, Release: f.ReleaseFor(c).Name, State: "stable"}
			switch {
			case f.Touched(c) && p.Rollout.Aborted:
				cs.State = "rolling back " + p.Rollout.Release
			case f.Reached(c):
				cs.State = "rolling out"
				if w.Canary == c {
					cs.State += " (canary cluster)"
				}
			case p.Rollout != nil && !p.Rollout.Aborted:
				cs.State = "waits for " + p.Rollout.Release
			}
			st.Clusters = append(st.Clusters, cs)
		}
	}
	waits := Waits(f)
	for _, w := range waits {
		if w.Approval != "" {
			st.Waiting = append(st.Waiting, fmt.Sprintf("approval of %s: gpufleet approve %s", w.What, w.Approval))
		} else {
			st.Waiting = append(st.Waiting, w.What)
		}
	}
	st.Services = servicePlacements(f)
	st.Next = nextCommand(f, waits)
	return st
}

func nextCommand(f *fleet.Fleet, waits []Waiting) string {
	p := f.Promotion
	switch {
	case aborted(p):
		return "gpufleet promote (ends the abort once the gate passes: " + gateCommand(f, touchedClusters(f, p)) + ")"
	case p.Rollout == nil:
		// A release older than the stable one is never offered: starting
		// it is a downgrade, which start warns about. Nor is one start
		// refuses for leaving the Network Operator out.
		var candidates []string
		for _, r := range f.ReleaseNames() {
			if r != p.Stable && len(f.Downgrade(r)) == 0 && f.NetworkOperatorLeftOut(f.Releases[r]) == "" {
				candidates = append(candidates, r)
			}
		}
		if len(candidates) == 0 {
			return "nothing to do: add a release to the fleet file"
		}
		return "gpufleet start " + strings.Join(candidates, " | ")
	case p.Paused:
		return "gpufleet resume"
	}
	step, err := Promote(f)
	if err != nil {
		for _, w := range waits {
			if w.Approval != "" {
				return "gpufleet approve " + w.Approval
			}
		}
		return "resolve: " + err.Error()
	}
	return "gpufleet promote (after the gate passes: " + gateCommand(f, step.Gate) + ")"
}

// gateCommand is the gate command that checks clusters: by wave when they
// are one wave, else one --cluster each.
func gateCommand(f *fleet.Fleet, clusters []string) string {
	for _, w := range f.Waves {
		if slices.Equal(w.Clusters, clusters) {
			return "gpufleet gate --wave " + w.Name
		}
	}
	return "gpufleet gate --cluster " + strings.Join(clusters, " --cluster ")
}

// AddGate adds each cluster's gate verdict to the status.
func (st *Status) AddGate(rep *gate.Report) {
	st.Live = true
	verdict := map[string]gate.Status{}
	failed := map[string][]string{}
	lifecycle := map[string]string{}
	for _, c := range rep.Checks {
		v, ok := verdict[c.Cluster]
		switch {
		case !ok || c.Status == gate.Fail || (c.Status == gate.Unknown && v == gate.Pass):
			verdict[c.Cluster] = c.Status
		}
		if c.Status != gate.Pass {
			failed[c.Cluster] = append(failed[c.Cluster], c.Name.String())
		}
		if c.Name.Kind == gate.CheckRollout {
			lifecycle[c.Cluster] = c.Observed
		}
	}
	for i := range st.Clusters {
		c := &st.Clusters[i]
		c.Lifecycle = lifecycle[c.Cluster]
		if a, ok := rep.Adoption[c.Cluster]; ok {
			c.Adoption = &a
		}
		c.Gate = string(verdict[c.Cluster])
		if n := len(failed[c.Cluster]); n > 0 {
			c.Gate += fmt.Sprintf(" (%s)", strings.Join(failed[c.Cluster], ", "))
		}
	}
}
