package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Options says what to start.
type Options struct {
	// Clusters are the names of the clusters to start; one when empty
	// ("cluster-1"). Each name is also a kubeconfig context.
	Clusters []string
	// CRDDirs are folders (or files) of CRD manifests to install in every cluster.
	CRDDirs []string
	// CRDs are CRD objects to install in every cluster.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Flux starts source-controller and kustomize-controller in every cluster
	// and installs Flux's CRDs.
	Flux bool
	// FluxImage also starts image-reflector-controller and
	// image-automation-controller in every cluster and installs their CRDs
	// (and notification-controller's). Needs Flux.
	FluxImage bool
	// ArgoCD names the clusters that run Argo CD (its application-controller
	// and repo-server, and a redis) as their GitOps engine, with its CRDs
	// and config objects installed (see [Cluster.WaitSynced]). Such a
	// cluster runs no Flux, whatever Flux says: one engine per cluster.
	ArgoCD []string
	// Notification also starts notification-controller in every cluster
	// (see [Flux.ReceiverURL]); the other Flux controllers send it their
	// events. Installs the same CRDs as FluxImage. Needs Flux.
	Notification bool
	// Kube starts kube-controller-manager (the controllers in
	// [KubeControllers]) and kube-scheduler in every cluster, so
	// Deployments, ReplicaSets and DaemonSets get pods, pods get nodes,
	// PodDisruptionBudgets are computed and nodes that stop heartbeating
	// are marked NotReady and tainted.
	Kube bool
	// Kwok starts kwok in every cluster as the kubelet of the nodes
	// labelled [KwokNodeLabel]=fake: node heartbeats and Leases, pods
	// going Pending → Running → Ready, deleted pods going away. The GPU
	// Operator's driver pods are left to the node simulator (package
	// nodesim). Each cluster also gets a CPU-only system node (see
	// [SystemNode]). Needs Kube to be useful: without a scheduler no pod
	// reaches a node.
	Kwok bool
	// Git starts a git server (see [Testbed.Git]).
	Git bool
	// Dir holds the kubeconfig, logs and Flux storage; a new temporary
	// folder when empty (removed by Stop only when the testbed made it).
	Dir string
	// Scheme for the clusters' clients; [NewScheme] when nil.
	Scheme *runtime.Scheme
	// StartTimeout bounds the start of each control plane and of Flux;
	// 90 s when zero (two cores starting several clusters at once are slow).
	StartTimeout time.Duration
	// AuditLog makes each API server write an audit log of every request's
	// metadata (see [Cluster.Requests]), to count what each program asked.
	AuditLog bool
	// DisabledAPIs are built-in API group/versions the API servers do not
	// serve ("resource.k8s.io/v1"), as on an older Kubernetes or one with
	// the API turned off (kube-apiserver --runtime-config GV=false).
	DisabledAPIs []string
}

// Testbed is a set of running clusters, and optionally a git server.
type Testbed struct {
	// Kubeconfig is the path of a kubeconfig with one context per cluster,
	// named after the cluster; the current context is the first cluster.
	Kubeconfig string
	// Dir holds the kubeconfig, logs and Flux storage.
	Dir string
	// Git is the git server, nil unless [Options.Git].
	Git *GitServer

	clusters []*Cluster
	ownDir   bool
	stopOnce sync.Once
	stopErr  error
}

// Start starts everything opts asks for. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Testbed, error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	if opts.Flux {
		if err := bins.CheckFlux(); err != nil {
			return nil, err
		}
	}
	if opts.Kube {
		if err := bins.CheckKube(); err != nil {
			return nil, err
		}
	}
	if opts.Kwok {
		if err := bins.CheckKwok(); err != nil {
			return nil, err
		}
	}
	if len(opts.ArgoCD) > 0 {
		if err := bins.CheckArgoCD(); err != nil {
			return nil, err
		}
	}
	if opts.FluxImage || opts.Notification {
		if !opts.Flux {
			return nil, errNeedsFlux
		}
		if err := bins.CheckFluxImage(); err != nil {
			return nil, err
		}
	}
	names := opts.Clusters
	if len(names) == 0 {
		names = []string{"cluster-1"}
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	for _, a := range opts.ArgoCD {
		if !slices.Contains(names, a) {
			return nil, fmt.Errorf("testbed: Argo CD asked for cluster %q, which is not one of %v", a, names)
		}
	}
	if opts.Scheme == nil {
		opts.Scheme = NewScheme()
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	tb := &Testbed{Dir: opts.Dir}
	if tb.Dir == "" {
		if tb.Dir, err = os.MkdirTemp("", "gpufleet-testbed-"); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
		tb.ownDir = true
	}
	crdDirs := append([]string(nil), opts.CRDDirs...)
	if opts.Flux {
		crdDirs = append(crdDirs, bins.FluxCRDDir())
	}
	if opts.FluxImage || opts.Notification {
		crdDirs = append(crdDirs, bins.FluxImageCRDDir())
	}

	// Clusters start in parallel: most of the ~5 s is waiting, not CPU.
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		dirs := crdDirs
		if slices.Contains(opts.ArgoCD, name) {
			// One engine per cluster: Argo CD's CRDs instead of Flux's.
			dirs = slices.DeleteFunc(slices.Clone(crdDirs), func(d string) bool { return d == bins.FluxCRDDir() || d == bins.FluxImageCRDDir() })
			dirs = append(dirs, bins.ArgoCDCRDDir())
		}
		wg.Go(func() {
			clusters[i], errs[i] = startCluster(clusterSpec{
				name: name, bins: bins, dir: filepath.Join(tb.Dir, name),
				crdDirs: dirs, crds: opts.CRDs, scheme: opts.Scheme, timeout: opts.StartTimeout,
				audit: opts.AuditLog, disabledAPIs: opts.DisabledAPIs,
			})
		})
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			tb.clusters = append(tb.clusters, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, tb.Stop())
	}

	if opts.Kube || opts.Kwok {
		kctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
		defer cancel()
		errs := make([]error, len(tb.clusters))
		var wg sync.WaitGroup
		for i, c := range tb.clusters {
			wg.Go(func() { errs[i] = c.startKubelet(kctx, opts.Kube, opts.Kwok) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, errors.Join(err, tb.Stop())
		}
	}
	if opts.Flux || len(opts.ArgoCD) > 0 {
		fctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
		defer cancel()
		for _, c := range tb.clusters {
			var err error
			switch {
			case slices.Contains(opts.ArgoCD, c.Name):
				c.ArgoCD, err = startArgoCD(fctx, bins, c)
			case opts.Flux:
				err = startClusterFlux(fctx, bins, c, opts)
			}
			if err != nil {
				return nil, errors.Join(err, tb.Stop())
			}
		}
	}
	if opts.Git {
		if tb.Git, err = StartGitServer(); err != nil {
			return nil, errors.Join(err, tb.Stop())
		}
	}

	configs := map[string]*rest.Config{}
	for _, c := range tb.clusters {
		configs[c.Name] = c.Config
	}
	tb.Kubeconfig = filepath.Join(tb.Dir, "kubeconfig")
	if err := writeKubeconfig(tb.Kubeconfig, names, configs, names[0]); err != nil {
		return nil, errors.Join(err, tb.Stop())
	}
	return tb, nil
}

// New starts a testbed for the test t and stops it when t ends. Under
// -short it skips t, since the testbed needs programs built by
// "make testbin"; when they are missing it fails t with a message saying so.
// When t fails, the tail of every Flux controller's log is logged.
func New(t testing.TB, opts Options) *Testbed {
	t.Helper()
	if testing.Short() {
		t.Skip("testbed: skipped under -short (needs kube-apiserver and etcd)")
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	start := time.Now()
	tb, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	// Cleanups run last-registered first: the log dump runs before Stop,
	// which runs before t.TempDir's removal.
	t.Cleanup(func() {
		if err := tb.Stop(); err != nil {
			t.Errorf("testbed: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testbed logs:\n%s", tb.LogTail(40))
		}
	})
	t.Logf("testbed: %d cluster(s) up in %s (flux=%t image=%t notification=%t argocd=%v kube=%t kwok=%t), kubeconfig %s",
		len(tb.clusters), time.Since(start).Round(10*time.Millisecond), opts.Flux, opts.FluxImage, opts.Notification,
		opts.ArgoCD, opts.Kube, opts.Kwok, tb.Kubeconfig)
	return tb
}

// Cluster returns the cluster called name, or nil.
func (tb *Testbed) Cluster(name string) *Cluster {
	for _, c := range tb.clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Clusters returns the clusters in the order they were named.
func (tb *Testbed) Clusters() []*Cluster { return append([]*Cluster(nil), tb.clusters...) }

// LogTail returns the last n lines of the log of every program running
// beside the clusters' control planes.
func (tb *Testbed) LogTail(n int) string {
	var b strings.Builder
	for _, c := range tb.clusters {
		if tail := c.LogTail(n); tail != "" {
			fmt.Fprintf(&b, "=== cluster %s ===\n%s", c.Name, tail)
		}
	}
	return b.String()
}

// Stop stops everything, in the order that avoids slow shutdowns: every
// program running beside a control plane first (the GPU Operator, Flux,
// kwok, the scheduler and controller-manager: a program whose API server
// vanished retries for ~30 s), then the control planes, then the git server.
// It is safe to call twice.
func (tb *Testbed) Stop() error {
	tb.stopOnce.Do(func() {
		var errs []error
		for _, c := range tb.clusters {
			errs = append(errs, c.stopPrograms())
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range tb.clusters {
			wg.Go(func() {
				err := c.stopControlPlane()
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
		if tb.Git != nil {
			errs = append(errs, tb.Git.Stop())
		}
		if tb.ownDir {
			errs = append(errs, os.RemoveAll(tb.Dir))
		}
		tb.stopErr = errors.Join(errs...)
	})
	return tb.stopErr
}

// checkNames rejects duplicate or empty cluster names, and names that are
// not usable as folder names.
func checkNames(names []string) error {
	seen := map[string]bool{}
	var errs []error
	for _, n := range names {
		switch {
		case n == "" || strings.ContainsAny(n, `/\`) || n == "." || n == "..":
			errs = append(errs, fmt.Errorf("testbed: invalid cluster name %q", n))
		case seen[n]:
			errs = append(errs, fmt.Errorf("testbed: cluster %q named twice", n))
		}
		seen[n] = true
	}
	return errors.Join(errs...)
}

// startClusterFlux starts c's Flux controllers. Their ports are chosen free
// and then handed to the programs, so another test binary running beside
// this one can take a port in between: then the controllers are stopped
// and started again on fresh ports, a few times.
func startClusterFlux(ctx context.Context, bins Binaries, c *Cluster, opts Options) error {
	var err error
	for range 4 {
		if err = startClusterFluxOnce(ctx, bins, c, opts); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		if c.Flux != nil {
			_ = c.Flux.stop()
			c.Flux = nil
		}
	}
	return err
}

func startClusterFluxOnce(ctx context.Context, bins Binaries, c *Cluster, opts Options) error {
	var notif *notificationAddrs
	if opts.Notification {
		var err error
		if notif, err = newNotificationAddrs(); err != nil {
			return err
		}
	}
	f, err := startFlux(ctx, bins, c, notif.eventsURL())
	if err != nil {
		return err
	}
	c.Flux = f
	if opts.FluxImage || opts.Notification {
		return startFluxExtras(ctx, bins, c, opts.FluxImage, notif)
	}
	return nil
}
