package testbed

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const binKwok = "kwok"

// KwokNodeLabel is the label (with value "fake") that hands a node to
// kwok: kwok plays the kubelet of exactly the nodes that carry it. Removing
// it stops the node's heartbeats, as a kubelet that died would. (A label,
// not an annotation: kwok's node watch is filtered by the API server on
// labels, so a node that loses the label leaves kwok's hands at once, while
// one that loses an annotation goes on being heartbeated.)
const KwokNodeLabel = "kwok.x-k8s.io/node"

// PodReadyAfterAnnotation on a pod makes kwok start it that long (a Go
// duration, "5s") after it was bound, as a slow container would: a
// replacement pod that is not Ready yet keeps a PodDisruptionBudget closed.
const PodReadyAfterAnnotation = "testbed.gpufleet.io/ready-after"

// KwokLeaseDuration is the node Lease duration kwok renews, well inside
// [NodeMonitorGracePeriod] so a healthy node never looks late.
const KwokLeaseDuration = 8 * time.Second

// kwokStages is how kwok plays the kubelet: see kwok/stages.yaml.
//
//go:embed kwok/stages.yaml
var kwokStages []byte

// CheckKwok reports whether kwok is present.
func (b Binaries) CheckKwok() error { return b.check(binKwok) }

// startKwok starts kwok as the kubelet of c's nodes labelled
// [KwokNodeLabel]=fake and waits until it answers /healthz.
func startKwok(ctx context.Context, bins Binaries, c *Cluster) (*process, error) {
	dir := filepath.Join(c.Dir, "kwok")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: kwok: %w", c.Name, err)
	}
	stages := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return nil, fmt.Errorf("cluster %s: kwok: %w", c.Name, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--config=" + stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=" + KwokNodeLabel + "=fake",
		"--node-lease-duration-seconds=" + strconv.Itoa(int(KwokLeaseDuration/time.Second)),
		// Pod IPs are only strings in pod status here (nothing routes to
		// them); a /16 leaves room for every operand pod of a large pool.
		"--cidr=10.64.0.0/16",
		"--node-ip=10.63.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		// Warnings only: at INFO kwok logs every Lease renewal.
		"--v=WARN",
	}
	// kwok reads a config file from the home folder by default: a private
	// HOME keeps a developer's own kwok settings out.
	env := environ(map[string]string{"KUBECONFIG": c.Kubeconfig, "HOME": dir})
	p, err := startProcess(binKwok, bins.Path(binKwok), args, env, filepath.Join(dir, "kwok.log"))
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz"); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, errors.Join(err, p.stop(5*time.Second)))
	}
	return p, nil
}
