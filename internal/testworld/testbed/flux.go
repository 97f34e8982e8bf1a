package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FluxNamespace is where Flux runs and where the testbed's sync objects live.
const FluxNamespace = "flux-system"

// Flux is one cluster's source-controller and kustomize-controller, running
// out of cluster as subprocesses of the test.
type Flux struct {
	// ReceiverURL is notification-controller's webhook receiver
	// ("http://127.0.0.1:P"; a Receiver's status.webhookPath goes after it),
	// empty unless the testbed was started with [Options.Notification].
	ReceiverURL string
	// EventsURL is where notification-controller takes events, as the other
	// controllers' --events-addr; empty unless [Options.Notification].
	EventsURL string

	procs []*process
}

// startFlux starts both controllers against the cluster c and waits until
// their readiness endpoints answer. With a non-empty eventsURL they send
// their events to notification-controller there.
func startFlux(ctx context.Context, bins Binaries, c *Cluster, eventsURL string) (*Flux, error) {
	if err := c.EnsureNamespace(ctx, FluxNamespace); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, "flux")
	storage := filepath.Join(dir, "storage")
	// source-controller refuses to start when its storage folder is missing.
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: flux: %w", c.Name, err)
	}
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	storageAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	env := environ(map[string]string{"KUBECONFIG": c.Kubeconfig, "RUNTIME_NAMESPACE": FluxNamespace})
	type ctl struct {
		name   string
		health int
		args   []string
	}
	ctls := []ctl{
		{binSourceController, ports[1], []string{
			"--storage-path=" + storage,
			"--storage-addr=" + storageAddr,
			"--storage-adv-addr=" + storageAddr,
		}},
		// Without a short requeue a Kustomization waits 30 s for its source.
		{binKustomizeController, ports[2], []string{"--requeue-dependency=2s"}},
	}
	f := &Flux{}
	for _, ct := range ctls {
		args := append([]string{
			"--metrics-addr=0",
			"--health-addr=127.0.0.1:" + strconv.Itoa(ct.health),
			"--enable-leader-election=false",
			"--log-level=info",
		}, ct.args...)
		if eventsURL != "" {
			args = append(args, "--events-addr="+eventsURL)
		}
		p, err := startProcess(ct.name, bins.Path(ct.name), args, env, filepath.Join(dir, ct.name+".log"))
		if err != nil {
			return nil, errors.Join(err, f.stop())
		}
		f.procs = append(f.procs, p)
	}
	for i, ct := range ctls {
		url := "http://127.0.0.1:" + strconv.Itoa(ct.health) + "/readyz"
		if err := waitReady(ctx, f.procs[i], url); err != nil {
			return nil, errors.Join(fmt.Errorf("cluster %s: %w", c.Name, err), f.stop())
		}
	}
	return f, nil
}

// LogTail returns the last n lines of each controller's log, each block
// headed by the controller's name. Tests print it when they fail.
func (f *Flux) LogTail(n int) string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range f.procs {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.logPath, p.tail(n))
	}
	return b.String()
}

// LogPaths returns the controllers' log files.
func (f *Flux) LogPaths() []string {
	if f == nil {
		return nil
	}
	var paths []string
	for _, p := range f.procs {
		paths = append(paths, p.logPath)
	}
	return paths
}

// stop ends the controllers, kustomize-controller first since it reads from
// source-controller.
func (f *Flux) stop() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, v := range slices.Backward(f.procs) {
		errs = append(errs, v.stop(10*time.Second))
	}
	return errors.Join(errs...)
}
