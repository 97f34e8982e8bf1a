package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// TestRunAgainstTestbed runs the command against a real cluster with kwok
// as the kubelet, reached through a named context of the testbed's
// kubeconfig: the pool's nodes register and kwok reports them Ready.
func TestRunAgainstTestbed(t *testing.T) {
	tb := testbed.New(t, testbed.Options{Clusters: []string{"lab"}, Kwok: true})
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{
			"--kubeconfig", tb.Kubeconfig, "--context", "lab",
			"--pool", "name=h100,product=NVIDIA-H100-80GB-HBM3,nodes=3,driver=570.172.08",
			"--install-time", "1s",
		}, &stdout, &stderr)
	}()
	c := tb.Cluster("lab").Client
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.MatchingLabels{v1alpha1.LabelPool: "h100"}); err != nil {
			return false, nil
		}
		ready := 0
		for i := range nodes.Items {
			if planner.NodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		// The pool line is printed once AddPool has finished with every node.
		return ready == 3 && strings.Contains(stdout.String(), "pool h100: h100-0 h100-1 h100-2"), nil
	})
	cancel()
	code := <-done
	if err != nil {
		t.Fatalf("three Ready h100 nodes did not appear: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if code != exitOK {
		t.Errorf("run = %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
