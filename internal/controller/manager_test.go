package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/config"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestManagerServes checks the manager as the binary runs it: leader
// election takes a Lease, the probes answer, /metrics has the rollout
// metrics.
func TestManagerServes(t *testing.T) {
	env(t)
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	// As the Deployment runs it: its service account, its lease in its
	// namespace (config/rbac's Role).
	mgr, err := NewManager(ctx, asController(suite.cfg.Config), Options{
		MetricsAddr: metricsAddr, ProbeAddr: probeAddr,
		LeaderElect: true, LeaderElectionNamespace: config.Namespace,
		SkipNameValidation: true,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	waitFor(t, 30*time.Second, "readyz", func() (bool, string) {
		code, body := get("http://" + probeAddr + "/readyz")
		return code == http.StatusOK, fmt.Sprint(code, body)
	})
	if code, body := get("http://" + probeAddr + "/healthz"); code != http.StatusOK {
		t.Errorf("healthz: %d %s", code, body)
	}
	waitFor(t, 30*time.Second, "leader lease", func() (bool, string) {
		var lease coordinationv1.Lease
		err := suite.c.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: Name + ".gpufleet.io"}, &lease)
		return err == nil && lease.Spec.HolderIdentity != nil, fmt.Sprint(err)
	})
	// A rollout over no node: reconciled at once, its metrics appear.
	create(t, newRollout("served", "none", oldDriver, newDriver))
	defer deleteRollout(t, "served")
	waitFor(t, 20*time.Second, "rollout metrics served", func() (bool, string) {
		code, body := get("http://" + metricsAddr + "/metrics")
		return code == http.StatusOK &&
			strings.Contains(body, `gpufleet_rollout_phase{phase="Completed",rollout="served"} 1`) &&
			strings.Contains(body, `gpufleet_rollout_nodes{phase="Done",rollout="served"} 0`) &&
			strings.Contains(body, `gpufleet_rollout_failure_budget_remaining{rollout="served"} 0`) &&
			strings.Contains(body, "controller_runtime_reconcile_total"), fmt.Sprintf("%d, %d bytes", code, len(body))
	})
}
