package promote

import (
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// renderReached renders f and next, the fleet before and after one
// promotion step, for the clusters the step changes (render.SamePlan) and
// the serving stack: what differs between the two whole renders. Over a
// fleet of thousands of clusters a step reaches a wave or two; rendering
// every cluster twice and holding both outputs took most of `plan`'s time
// and memory.
func renderReached(f, next *fleet.Fleet, ro func(*fleet.Fleet) (render.Options, error)) (before, after *render.Output, err error) {
	var reached []string
	for _, name := range next.ClusterNames() {
		if !render.SamePlan(f, next, name) {
			reached = append(reached, name)
		}
	}
	if before, err = renderClustersWith(f, reached, ro); err != nil {
		return nil, nil, err
	}
	if after, err = renderClustersWith(next, reached, ro); err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// renderClustersWith is renderWith for some clusters.
func renderClustersWith(f *fleet.Fleet, clusters []string, ro func(*fleet.Fleet) (render.Options, error)) (*render.Output, error) {
	opts := render.Options{}
	if ro != nil {
		var err error
		if opts, err = ro(f); err != nil {
			return nil, err
		}
	}
	return render.RenderClusters(f, clusters, opts)
}
