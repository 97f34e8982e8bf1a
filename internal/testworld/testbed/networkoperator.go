package testbed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/netopplay"
)

// binOFEDUpgrade is the Network Operator's OFED upgrade controller as the
// testbed runs it: k8s-operator-libs' real upgrade state machine,
// configured as the operator configures it (hack/testbin/gpu-operator/
// ofed-upgrade).
const binOFEDUpgrade = "ofed-upgrade"

// CheckOFEDUpgrade reports whether the OFED upgrade controller is present.
func (b Binaries) CheckOFEDUpgrade() error { return b.check(binOFEDUpgrade) }

// NetworkOperatorOptions say how to run the Network Operator, as played
// here, for one cluster.
type NetworkOperatorOptions struct {
	// CRDPaths are the NicClusterPolicy CRD (files or folders) of the
	// Network Operator version to play; installed unless the cluster has
	// it. The CRD comes from the operator's chart (see
	// sharedtest.NicClusterPolicyCRD), not from a copy kept here.
	CRDPaths []string
	// Namespace is the operator's namespace, where the OFED DaemonSets and
	// pods run [fleet.DefaultNetworkOperatorNamespace].
	Namespace string
	// Requeue is how often the upgrade controller looks again while the
	// upgrade is on [2s; the real operator: 2m].
	Requeue time.Duration
}

// NetworkOperator is one cluster's NVIDIA Network Operator as the testbed
// plays it: the real OFED upgrade state machine as a subprocess, and the
// step that turns the NicClusterPolicy into the OFED DaemonSet played by
// package netopplay in this process.
type NetworkOperator struct {
	// Player is the played NicClusterPolicy → OFED DaemonSet step.
	Player *netopplay.OFEDDaemonSetPlayer

	proc      *process
	playerLog string
	cancel    context.CancelFunc
	done      chan struct{}
}

// StartNetworkOperator installs the NicClusterPolicy CRD and starts the
// Network Operator as played here for c (see [NetworkOperator]); it needs
// [Options.Kube] and [Options.Kwok] for the OFED pods to run, and package
// nodesim to play the driver inside them. Both parts stop with the
// testbed. Why played: the module proxy does not serve the Network
// Operator, so it cannot be built; its upgrade state machine can.
func (c *Cluster) StartNetworkOperator(ctx context.Context, opts NetworkOperatorOptions) (*NetworkOperator, error) {
	if c.NetworkOperator != nil {
		return nil, fmt.Errorf("cluster %s: the Network Operator runs already", c.Name)
	}
	if err := c.bins.CheckOFEDUpgrade(); err != nil {
		return nil, err
	}
	if len(opts.CRDPaths) == 0 {
		return nil, fmt.Errorf("cluster %s: the Network Operator needs its NicClusterPolicy CRD", c.Name)
	}
	ns := cmp.Or(opts.Namespace, fleet.DefaultNetworkOperatorNamespace)
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: opts.CRDPaths, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("cluster %s: NicClusterPolicy CRD: %w", c.Name, err)
	}
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, "network-operator")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--namespace=" + ns,
		"--requeue=" + cmp.Or(opts.Requeue, 2*time.Second).String(),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(health),
	}
	p, err := startProcess(binOFEDUpgrade, c.bins.Path(binOFEDUpgrade), args, environ(map[string]string{"KUBECONFIG": c.Kubeconfig}),
		filepath.Join(dir, binOFEDUpgrade+".log"))
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, "http://127.0.0.1:"+strconv.Itoa(health)+"/readyz"); err != nil {
		return nil, errors.Join(fmt.Errorf("cluster %s: %w", c.Name, err), p.stop(10*time.Second))
	}
	playerLog := filepath.Join(dir, "ofed-daemonset-player.log")
	logf, closeLog, err := lineLogger(playerLog)
	if err != nil {
		return nil, errors.Join(err, p.stop(10*time.Second))
	}
	player := netopplay.NewOFEDDaemonSetPlayer(c.Client, netopplay.Options{Namespace: ns, Logf: logf})
	// The player lives as long as the cluster, not as the caller's ctx.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeLog()
		_ = player.Run(pctx)
	}()
	c.NetworkOperator = &NetworkOperator{Player: player, proc: p, playerLog: playerLog, cancel: cancel, done: done}
	return c.NetworkOperator, nil
}

// lineLogger returns a Logf that appends a time-stamped line to the file at
// path, and the function that closes it.
func lineLogger(path string) (func(string, ...any), func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
	return logf, func() { f.Close() }, nil
}

// LogTail returns the last n lines of the upgrade controller's log and of
// the played DaemonSet step's.
func (o *NetworkOperator) LogTail(n int) string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("--- %s (%s) ---\n%s\n--- ofed-daemonset-player (%s) ---\n%s\n",
		binOFEDUpgrade, o.proc.logPath, o.proc.tail(n), o.playerLog, tailFile(o.playerLog, n))
}

func (o *NetworkOperator) stop() error {
	if o == nil {
		return nil
	}
	o.cancel()
	<-o.done
	return o.proc.stop(10 * time.Second)
}
