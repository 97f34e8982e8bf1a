package testbed

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SystemNode is the name of the CPU-only node every cluster started with
// [Options.Kwok] has, labelled as a control-plane node: the operators'
// own Deployments (the GPU Operator, NFD's master) prefer such nodes, as
// they do in production, so draining a GPU node never touches them.
const SystemNode = "system-0"

// createSystemNode registers [SystemNode] for kwok to run.
func (c *Cluster) createSystemNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: SystemNode,
		Labels: map[string]string{
			KwokNodeLabel:                           "fake",
			"kubernetes.io/hostname":                SystemNode,
			"kubernetes.io/os":                      "linux",
			"kubernetes.io/arch":                    "amd64",
			"node-role.kubernetes.io/control-plane": "",
		},
	}}
	if err := c.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster %s: create node %s: %w", c.Name, SystemNode, err)
	}
	// kwok writes the conditions; capacity is the node's own to report.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: SystemNode}, n); err != nil {
			return err
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("128Gi"),
			corev1.ResourcePods:   resource.MustParse("250"),
		}
		n.Status.Capacity, n.Status.Allocatable = res, res.DeepCopy()
		n.Status.NodeInfo = corev1.NodeSystemInfo{
			KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
			OSImage: "Ubuntu 22.04.5 LTS", KernelVersion: "5.15.0-139-generic", ContainerRuntimeVersion: "containerd://2.1.0",
		}
		return c.Client.Status().Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("cluster %s: node %s status: %w", c.Name, SystemNode, err)
	}
	return nil
}
