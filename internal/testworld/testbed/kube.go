package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Names of the control-plane programs hack/testbin.sh builds next to
// kube-apiserver.
const (
	binKubeControllerManager = "kube-controller-manager"
	binKubeScheduler         = "kube-scheduler"
)

// KubeControllers are the kube-controller-manager controllers a testbed
// cluster runs with [Options.Kube]: what makes Deployments, ReplicaSets and
// DaemonSets create pods, garbage-collects what their owners left, computes
// PodDisruptionBudgets (so an eviction is refused with 429 for real), marks
// nodes whose heartbeats stop NotReady and taints them, evicts pods from
// tainted nodes, gives namespaces their service accounts and tokens, and
// keeps pods' ResourceClaims.
// The others (cloud, volumes, certificates, jobs, ...) have nothing to do
// on a testbed and only cost CPU.
var KubeControllers = []string{
	"daemonset-controller",
	"deployment-controller",
	"replicaset-controller",
	"garbage-collector-controller",
	"disruption-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"namespace-controller",
	// Dynamic resource allocation: makes a pod's claims from its
	// templates, takes a pod that is gone out of its claims' reservedFor,
	// and deletes the claims made for it.
	"resourceclaim-controller",
}

// Node lifecycle timing of a testbed cluster: how often the node lifecycle
// controller looks at nodes, and how long a node may go without a heartbeat
// (its Lease, renewed by kwok) before it is marked NotReady and tainted.
// The production defaults (5 s and 50 s) would make a test wait a minute.
const (
	NodeMonitorPeriod      = 2 * time.Second
	NodeMonitorGracePeriod = 16 * time.Second
)

// CheckKube reports whether kube-controller-manager and kube-scheduler are
// present.
func (b Binaries) CheckKube() error { return b.check(binKubeControllerManager, binKubeScheduler) }

// Kube is one cluster's kube-controller-manager and kube-scheduler, run out
// of cluster as subprocesses with the cluster admin's kubeconfig.
type Kube struct {
	procs []*process
}

// startKube starts kube-controller-manager and kube-scheduler for c and
// waits until both answer /healthz. They serve HTTPS on loopback with a
// self-signed certificate; authentication and authorization are delegated
// to the API server through the same kubeconfig.
func startKube(ctx context.Context, bins Binaries, c *Cluster) (*Kube, error) {
	dir := filepath.Join(c.Dir, "kube")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	certDir := c.env.ControlPlane.APIServer.CertDir
	ports := make([]int, 2)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	common := func(port int, certs string) []string {
		return []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + certs,
			"--v=1",
		}
	}
	type prog struct {
		name string
		port int
		args []string
	}
	progs := []prog{
		{binKubeControllerManager, ports[0], append(common(ports[0], filepath.Join(dir, "controller-manager-certs")),
			"--controllers="+strings.Join(KubeControllers, ","),
			// envtest's kube-apiserver verifies service account tokens with
			// this key pair: the token controller must sign with it.
			"--service-account-private-key-file="+filepath.Join(certDir, "sa-signer.key"),
			"--root-ca-file="+filepath.Join(certDir, "apiserver.crt"),
			"--use-service-account-credentials=false",
			"--node-monitor-period="+NodeMonitorPeriod.String(),
			"--node-monitor-grace-period="+NodeMonitorGracePeriod.String(),
		)},
		{binKubeScheduler, ports[1], common(ports[1], filepath.Join(dir, "scheduler-certs"))},
	}
	k := &Kube{}
	env := environ(map[string]string{"KUBECONFIG": c.Kubeconfig})
	for _, p := range progs {
		proc, err := startProcess(p.name, bins.Path(p.name), p.args, env, filepath.Join(dir, p.name+".log"))
		if err != nil {
			return nil, errors.Join(err, k.stop())
		}
		k.procs = append(k.procs, proc)
	}
	for i, p := range progs {
		if err := waitHealthyTLS(ctx, k.procs[i], "https://127.0.0.1:"+strconv.Itoa(p.port)+"/healthz"); err != nil {
			return nil, errors.Join(fmt.Errorf("cluster %s: %w", c.Name, err), k.stop())
		}
	}
	return k, nil
}

// waitHealthyTLS is waitReady for a program serving HTTPS with a
// self-signed certificate (nothing secret crosses loopback here).
func waitHealthyTLS(ctx context.Context, p *process, url string) error {
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	return pollOK(ctx, p, url, client)
}

// LogTail returns the last n lines of each program's log.
func (k *Kube) LogTail(n int) string {
	if k == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range k.procs {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.logPath, p.tail(n))
	}
	return b.String()
}

func (k *Kube) stop() error {
	if k == nil {
		return nil
	}
	var errs []error
	for _, v := range slices.Backward(k.procs) {
		errs = append(errs, v.stop(10*time.Second))
	}
	return errors.Join(errs...)
}
