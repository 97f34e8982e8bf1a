package nodesim

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ResourceGPU is the extended resource the GPU device plugin advertises.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// ensureNode registers node name of pool p for kwok, with its driver
// already installed, unless it exists, as its kubelet would. An existing
// node is left as it is: its labels are the cluster's record of what is
// installed. kwok writes the node's conditions, and the operator's
// DaemonSet its driver pod.
func (s *Sim) ensureNode(ctx context.Context, p Pool, name string) error {
	err := s.c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("node %s: %w", name, err)
	}
	node := &corev1.Node{
		// A kubelet registers its node with this annotation; a node with
		// none at all is one no real cluster has, and the GPU Operator
		// v25.3.4 panics on it (controllers/state_manager.go
		// applyDriverAutoUpgradeAnnotation writes into the node's nil
		// annotation map once its upgrade policy is on).
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels(p, name, p.Driver), Annotations: map[string]string{
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + name},
	}
	if err := s.c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	// The capacity is the node's own to report.
	if err := s.updateNodeStatus(ctx, name, func(n *corev1.Node) bool {
		setCapacity(n, p)
		return true
	}); err != nil {
		return err
	}
	s.opts.Logf("nodesim: registered node %s (pool %s, driver %s)", name, p.Name, p.Driver)
	return nil
}

// poolOf returns the pool of simulated node name.
func (s *Sim) poolOf(name string) Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools[name]
}

// setCondition puts c into n's conditions, keeping the transition time when
// the status does not change.
func setCondition(n *corev1.Node, c corev1.NodeCondition) {
	for i := range n.Status.Conditions {
		cur := &n.Status.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		*cur = c
		return
	}
	n.Status.Conditions = append(n.Status.Conditions, c)
}

// updateNodeStatus reads node name, lets mutate change its status, and
// writes it when mutate says it changed, retrying on conflicts (others write
// the same node: the heartbeat, faults, a controller).
func (s *Sim) updateNodeStatus(ctx context.Context, name string, mutate func(*corev1.Node) bool) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n := &corev1.Node{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if !mutate(n) {
			return nil
		}
		return s.c.Status().Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("node %s: update status: %w", name, err)
	}
	return nil
}

// updateNode reads node name, lets mutate change it and writes it,
// retrying on conflicts (kwok, the node lifecycle controller and gpufleet
// write the same node).
func (s *Sim) updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n := &corev1.Node{}
		if err := s.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		mutate(n)
		return s.c.Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("node %s: update: %w", name, err)
	}
	return nil
}

// setCapacity writes what a node of pool p reports of itself: its
// resources (the GPUs the device plugin advertises among them) and system
// info (the OS and kernel NFD's labels say too).
func setCapacity(n *corev1.Node, p Pool) {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("96"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		ResourceGPU:           resource.MustParse(strconv.Itoa(p.GPUCount)),
	}
	n.Status.Capacity = res
	n.Status.Allocatable = res.DeepCopy()
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
		OSImage: "Ubuntu 22.04.5 LTS", KernelVersion: simKernel, ContainerRuntimeVersion: "containerd://2.1.0",
	}
}
