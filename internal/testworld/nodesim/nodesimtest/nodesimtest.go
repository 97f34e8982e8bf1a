// Package nodesimtest plays, for tests whose testbed runs kube-controller-manager,
// kube-scheduler and kwok but no GPU Operator, the two things the operator
// does that simulated GPU nodes need: it labels the nodes where Node Feature
// Discovery found an NVIDIA PCI device nvidia.com/gpu.present=true, and its
// NVIDIADrivers run one driver DaemonSet per driver version. The real
// DaemonSet controller and scheduler then put the driver pods on the nodes
// (and take them away as gpufleet.io/driver labels change), kwok runs them,
// and the node agent plays the driver install inside them.
//
// Only tests import it: the binaries never play the operator.
package nodesimtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// AddPool adds pool p to sim, marks its nodes as GPU nodes and makes sure
// the driver DaemonSet of p.Driver runs in namespace, so that each node's
// driver pod comes up as it would under the GPU Operator. It returns the
// nodes' names.
func AddPool(ctx context.Context, c client.Client, sim *nodesim.Sim, namespace string, p nodesim.Pool) ([]string, error) {
	nodes, err := sim.AddPool(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := MarkGPUNodes(ctx, c, nodes...); err != nil {
		return nil, err
	}
	if p.DRA {
		if err := DRADriver(ctx, c); err != nil {
			return nil, err
		}
	}
	if p.Driver == "" {
		return nodes, nil
	}
	return nodes, DriverDaemonSets(ctx, c, namespace, p.Driver)
}

// MarkGPUNodes labels nodes nvidia.com/gpu.present=true, as the GPU
// Operator labels every node with NFD's NVIDIA PCI label.
func MarkGPUNodes(ctx context.Context, c client.Client, nodes ...string) error {
	for _, name := range nodes {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			if n.Labels[v1alpha1.LabelGPUPresent] == "true" {
				return nil
			}
			n.Labels[v1alpha1.LabelGPUPresent] = "true"
			return c.Update(ctx, n)
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
	}
	return nil
}

// DriverDaemonSets creates, in namespace (created too when missing), the
// DaemonSet the GPU Operator's NVIDIADriver of each driver version would
// run, unless it exists: it selects the nodes labelled
// gpufleet.io/driver=<version>, and its pods carry the labels and the
// driver container (its image tag the version) by which the node agent and
// the lifecycle controller know a driver pod. Like the operator's, it
// tolerates every taint, so a cordon or a quarantine never takes a node's
// driver away.
func DriverDaemonSets(ctx context.Context, c client.Client, namespace string, versions ...string) error {
	return DriverDaemonSetsWithOptions(ctx, c, namespace, DriverOptions{}, versions...)
}

// DriverOptions shape the driver DaemonSets as an NVIDIADriver's spec
// would.
type DriverOptions struct {
	// RDMA is the NVIDIADriver's spec.rdma.enabled (GPUDirect RDMA): the
	// GPU Operator v25.3.4 then adds the nvidia-peermem-ctr sidecar, of
	// the driver's image, to the driver pod (its manifests/state-driver
	// DaemonSet), and the node agent plays its wait for the node's OFED.
	RDMA bool
}

// DriverDaemonSetsWithOptions is [DriverDaemonSets] with the DaemonSets
// shaped by opts.
func DriverDaemonSetsWithOptions(ctx context.Context, c client.Client, namespace string, opts DriverOptions, versions ...string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", namespace, err)
	}
	for _, v := range versions {
		if err := nodesim.ValidateVersion(v); err != nil {
			return err
		}
		name := "nvidia-driver-" + strings.ReplaceAll(v, ".", "-")
		image := "nvcr.io/nvidia/driver:" + v + "-ubuntu22.04"
		containers := []corev1.Container{{Name: nodesim.DriverContainer, Image: image}}
		if opts.RDMA {
			containers = append(containers, corev1.Container{
				Name: v1alpha1.PeermemContainer, Image: image,
				Command: []string{"nvidia-driver"}, Args: []string{"reload_nvidia_peermem"},
			})
		}
		pod := map[string]string{"app": name, v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: pod},
					Spec: corev1.PodSpec{
						NodeSelector:      map[string]string{v1alpha1.LabelDriver: v},
						Containers:        containers,
						Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						PriorityClassName: "system-node-critical",
					},
				},
			},
		}
		if err := c.Create(ctx, ds); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("driver DaemonSet %s: %w", name, err)
		}
	}
	return nil
}

// WaitReady waits until each of nodes is Ready and, unless version is
// empty, runs a Ready driver pod of version in namespace that GFD's label
// reports, as the nodes of a pool that has been running do. sync, when not
// nil, runs before each look: the pass of a simulator that does not Run.
func WaitReady(ctx context.Context, c client.Client, namespace, version string, nodes []string, sync func(context.Context) error) error {
	var waiting []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if sync != nil {
			if err := sync(ctx); err != nil {
				return false, nil // conflicts with kwok and the controllers: the next pass retries
			}
		}
		var list corev1.NodeList
		var pods corev1.PodList
		if err := c.List(ctx, &list); err != nil {
			return false, nil
		}
		if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}); err != nil {
			return false, nil
		}
		driver := map[string]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && nodesim.DriverPodVersion(p) == version && planner.PodReady(p) {
				driver[p.Spec.NodeName] = true
			}
		}
		ready := map[string]bool{}
		for i := range list.Items {
			n := &list.Items[i]
			ready[n.Name] = planner.NodeReady(n) &&
				(version == "" || driver[n.Name] && n.Labels[v1alpha1.LabelGFDDriverFull] == version)
		}
		waiting = waiting[:0]
		for _, n := range nodes {
			if !ready[n] {
				waiting = append(waiting, n)
			}
		}
		return len(waiting) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready with a Ready driver pod of %q: %v: %w", version, waiting, err)
	}
	return nil
}
