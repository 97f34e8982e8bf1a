package explain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// Options say which cluster to explain and how to reach it.
type Options struct {
	Fleet   *fleet.Fleet
	Cluster string
	// Revision is the git commit Flux should have fetched and applied;
	// empty skips those comparisons.
	Revision string
	// Kubeconfig is an explicit kubeconfig file; empty uses the standard
	// loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// Timeout bounds reading the cluster; 30 s when zero.
	Timeout time.Duration
}

// UnreadableError says the cluster could not be read: explain could not
// find out, which is never an answer (fail closed).
type UnreadableError struct {
	Cluster string
	Err     error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("cluster %s could not be read: %v", e.Cluster, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Run reads the cluster through its kubeconfig context and explains it.
// It never writes to the cluster. An unknown cluster is an error; an
// unreachable or unreadable one is an *UnreadableError.
func (o Options) Run(ctx context.Context) (*Answer, error) {
	c, ok := o.Fleet.Clusters[o.Cluster]
	if !ok {
		return nil, fmt.Errorf("unknown cluster %q", o.Cluster)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl, err := gate.ClientFor(o.Kubeconfig, c.Context)
	if err != nil {
		return nil, &UnreadableError{Cluster: o.Cluster, Err: err}
	}
	e := gate.Expect(o.Fleet, o.Cluster, o.Revision)
	obs, err := observe(ctx, cl, e)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		return nil, &UnreadableError{Cluster: o.Cluster, Err: err}
	}
	a := Walk(o.Fleet, e, obs)
	a.Context = c.Context
	return a, nil
}
