package gate

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Options say which clusters to check and how.
type Options struct {
	Fleet    *fleet.Fleet
	Clusters []string
	// Revision is the commit Flux must have applied; empty skips that check.
	Revision string
	// Kubeconfig is an explicit kubeconfig file; empty uses the standard
	// loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// Timeout bounds the checks of each cluster.
	Timeout time.Duration
	// Now is the clock (for the report's duration).
	Now func() time.Time
}

// Run checks every cluster concurrently, each within Timeout, and returns
// the report. It never writes to a cluster.
func Run(ctx context.Context, opts Options) *Report {
	start := opts.Now()
	rep := &Report{Revision: opts.Revision, Clusters: slices.Clone(opts.Clusters)}
	results := make([][]Check, len(opts.Clusters))
	var wg sync.WaitGroup
	for i, name := range opts.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = checkCluster(ctx, opts, name)
		}()
	}
	wg.Wait()
	for _, r := range results {
		rep.Checks = append(rep.Checks, r...)
	}
	rep.Took = opts.Now().Sub(start)
	return rep
}

// checkCluster connects through the cluster's kubeconfig context and
// evaluates it; any failure to connect or read is one Unknown check.
func checkCluster(ctx context.Context, opts Options, name string) []Check {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cluster := opts.Fleet.Clusters[name]
	unknown := func(msg string) []Check {
		return []Check{{Cluster: name, Name: "connect", Status: Unknown, Expected: "reachable through context " + cluster.Context, Observed: "not checked", Message: msg}}
	}
	c, err := ClientFor(opts.Kubeconfig, cluster.Context)
	if err != nil {
		return unknown(err.Error())
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
				return unknown(fmt.Sprintf("timed out after %s: %v", opts.Timeout, r.err))
			}
			return unknown(r.err.Error())
		}
		return Evaluate(e, r.o)
	case <-ctx.Done():
		return unknown(fmt.Sprintf("timed out after %s", opts.Timeout))
	}
}

// ClientFor builds a read client for a kubeconfig context, with the
// gate's scheme. A context the kubeconfig lacks is an error, never a
// fallback to the current context.
func ClientFor(kubeconfig, context string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if _, ok := raw.Contexts[context]; !ok {
		return nil, fmt.Errorf("context %q is not in the kubeconfig", context)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", context, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// HeadRevision is the commit the fleet repository holding dir is at.
func HeadRevision(dir string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD in %s: %w (give --revision)", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
