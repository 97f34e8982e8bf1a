package gate

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// DefaultConcurrency is how many clusters Run checks at once when Options
// leave it unset. Past it the gate gained nothing on the benchmark's 500
// clusters (the API servers answering were the limit), while each cluster
// in flight holds a connection and its node list in memory.
const DefaultConcurrency = 32

// Options say which clusters to check and how.
type Options struct {
	Fleet    *fleet.Fleet
	Clusters []string
	// Revision is the commit Flux must have applied; empty skips that check.
	Revision string
	// Kubeconfig is an explicit kubeconfig file; empty uses the standard
	// loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// Timeout bounds the checks of each cluster, from when its check
	// starts (a cluster waiting for a free slot is not timed yet).
	Timeout time.Duration
	// Concurrency is the most clusters checked at once;
	// DefaultConcurrency when zero or less.
	Concurrency int
	// Checked, when set, is told each cluster whose checks are done (from
	// the checking goroutines, so it must be safe for concurrent use): a
	// terminal shows how far a wave of many clusters has got.
	Checked func(cluster string)
	// Now is the clock (for the report's duration).
	Now func() time.Time
}

// Run checks the clusters, at most Concurrency at once, each within
// Timeout, and returns the report. It never writes to a cluster.
func Run(ctx context.Context, opts Options) *Report {
	start := opts.Now()
	rep := &Report{Revision: opts.Revision, Clusters: slices.Clone(opts.Clusters)}
	results := make([][]Check, len(opts.Clusters))
	adoption := make([]*Adoption, len(opts.Clusters))
	kc, err := LoadKubeconfig(opts.Kubeconfig)
	if err != nil {
		for i, name := range opts.Clusters {
			results[i] = unknown(opts, name, err.Error())
		}
	} else {
		slots := opts.Concurrency
		if slots <= 0 {
			slots = DefaultConcurrency
		}
		// The loop blocks for a free slot before it starts a goroutine, so
		// a fleet of any size has at most slots checks (and goroutines) in
		// flight.
		sem := make(chan struct{}, slots)
		var wg sync.WaitGroup
		for i, name := range opts.Clusters {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				results[i], adoption[i] = checkCluster(ctx, opts, kc, name)
				if opts.Checked != nil {
					opts.Checked(name)
				}
			})
		}
		wg.Wait()
	}
	for i, r := range results {
		rep.Checks = append(rep.Checks, r...)
		if a := adoption[i]; a != nil {
			if rep.Adoption == nil {
				rep.Adoption = map[string]Adoption{}
			}
			rep.Adoption[opts.Clusters[i]] = *a
		}
	}
	rep.Took = opts.Now().Sub(start)
	return rep
}

// unknown is the one check of a cluster that could not be read.
func unknown(opts Options, name, msg string) []Check {
	cluster := opts.Fleet.Clusters[name]
	return []Check{{Cluster: name, Name: ConnectCheck(), Status: Unknown, Expected: "reachable through context " + cluster.Context, Observed: "not checked", Message: msg}}
}

// checkCluster connects through the cluster's kubeconfig context and
// evaluates it; any failure to connect or read is one Unknown check, and no
// adoption.
func checkCluster(ctx context.Context, opts Options, kc *Kubeconfig, name string) ([]Check, *Adoption) {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := kc.Client(opts.Fleet.Clusters[name].Context)
	if err != nil {
		return unknown(opts, name, err.Error()), nil
	}
	e := Expect(opts.Fleet, name, opts.Revision)
	type result struct {
		o   Observed
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := Observe(ctx, c, e)
		done <- result{o, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if ctx.Err() != nil {
				return unknown(opts, name, fmt.Sprintf("timed out after %s: %v", opts.Timeout, r.err)), nil
			}
			return unknown(opts, name, r.err.Error()), nil
		}
		a := AdoptionOf(e, r.o)
		return Evaluate(e, r.o), &a
	case <-ctx.Done():
		return unknown(opts, name, fmt.Sprintf("timed out after %s", opts.Timeout)), nil
	}
}

// HeadRevision is the commit the fleet repository holding dir is at.
func HeadRevision(dir string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD in %s: %w (give --revision)", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
