package nodesim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kwok is the kubelet of the simulated nodes: the simulator registers each
// node with kwok's label (and NFD's, which the GPU Operator keys its
// DaemonSets on), and takes the label away to stop the node's kubelet
// ([Sim.SetNotReady]): its Lease then goes stale, and the real node
// lifecycle controller marks it NotReady and taints it.

// The OS and kernel the simulated nodes report.
const (
	simOSID      = "ubuntu"
	simOSVersion = "22.04"
	simKernel    = "5.15.0-139-generic"
)

// kwokLabel hands a node to kwok (see testbed.KwokNodeLabel; repeated
// here so that nodesim does not depend on the testbed).
const kwokLabel = "kwok.x-k8s.io/node"

// kwokHeartbeat keeps the node's kwok label as the simulator was told:
// present while the node's kubelet runs, absent after SetNotReady.
func (s *Sim) kwokHeartbeat(ctx context.Context, n *corev1.Node) error {
	want := !s.isNotReady(n.Name)
	if (n.Labels[kwokLabel] == "fake") == want {
		return nil
	}
	return s.setKwokManaged(ctx, n.Name, want)
}

func (s *Sim) setKwokManaged(ctx context.Context, node string, managed bool) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n := &corev1.Node{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		if (n.Labels[kwokLabel] == "fake") == managed {
			return nil
		}
		if managed {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[kwokLabel] = "fake"
		} else {
			delete(n.Labels, kwokLabel)
		}
		return s.c.Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("node %s: kwok label: %w", node, err)
	}
	s.opts.Logf("nodesim: node %s: kubelet (kwok) running=%t", node, managed)
	return nil
}
