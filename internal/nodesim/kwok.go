package nodesim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// With [Options.Kwok], kwok is the kubelet of the simulated nodes and the
// GPU Operator's real driver DaemonSets (created by the real operator,
// their pods by the real DaemonSet controller and scheduler) put the driver
// pods on them. The simulator then plays only what is GPU-specific:
//
//   - Node Feature Discovery and GPU Feature Discovery: the node registers
//     with the labels they would have set (the PCI vendor, the OS release and
//     kernel the operator keys its DaemonSets on, the GPU product and the
//     installed driver's version);
//   - the driver install inside a driver pod: how long it takes, whether it
//     ever succeeds (a version marked bad crash-loops), and GFD relabelling
//     the node with the new version once the pod is Ready;
//   - a GPU node problem detector (XID/ECC conditions and Events), and a
//     kubelet that stops: [Sim.SetNotReady] takes the node away from kwok,
//     whose Lease then goes stale, and the real node lifecycle controller
//     marks it NotReady and taints it.

// Labels Node Feature Discovery sets that the GPU Operator keys on.
const (
	// LabelNFDNvidiaPCI says the node has an NVIDIA PCI device; the
	// operator labels such nodes nvidia.com/gpu.present=true itself.
	LabelNFDNvidiaPCI = "feature.node.kubernetes.io/pci-10de.present"
	// LabelNFDOSID and LabelNFDOSVersion give the OS release: the operator
	// runs one driver DaemonSet per OS version.
	LabelNFDOSID      = "feature.node.kubernetes.io/system-os_release.ID"
	LabelNFDOSVersion = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
	// LabelNFDKernel is the full kernel version (one precompiled driver
	// DaemonSet per kernel).
	LabelNFDKernel = "feature.node.kubernetes.io/kernel-version.full"
)

// The OS and kernel the simulated nodes report.
const (
	simOSID      = "ubuntu"
	simOSVersion = "22.04"
	simKernel    = "5.15.0-139-generic"
)

// kwokLabel hands a node to kwok (see testbed.KwokNodeLabel; repeated
// here so that nodesim does not depend on the testbed).
const kwokLabel = "kwok.x-k8s.io/node"

// kwokNodeLabels are the labels of a node of pool p registering with
// driver v installed: NFD's and GFD's, and gpufleet's. Unlike the
// stand-alone mode there is no nvidia.com/gpu.present: the real operator
// sets it (and its nvidia.com/gpu.deploy.* labels) from NFD's PCI label.
func kwokNodeLabels(p Pool, node, v string) map[string]string {
	l := nodeLabels(p, node, v)
	delete(l, v1alpha1.LabelGPUPresent)
	l[LabelNFDNvidiaPCI] = "true"
	l[LabelNFDOSID] = simOSID
	l[LabelNFDOSVersion] = simOSVersion
	l[LabelNFDKernel] = simKernel
	l[kwokLabel] = "fake"
	return l
}

// syncKwok does one pass in kwok mode: for each simulated node, the driver
// install inside the driver pods the operator's DaemonSets put there.
func (s *Sim) syncKwok(ctx context.Context) error {
	now := s.opts.Clock.Now()
	byName, podsOn, err := s.snapshot(ctx, client.InNamespace(s.opts.DriverNamespace),
		client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver})
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range s.Nodes() {
		n := byName[name]
		if n == nil {
			// Deleted by someone: a real node would register again.
			errs = append(errs, s.ensureNode(ctx, s.poolOf(name), name))
			continue
		}
		errs = append(errs, s.kwokHeartbeat(ctx, n))
		if s.isNotReady(name) {
			// The node's kubelet is down: nothing on it changes.
			continue
		}
		for _, p := range podsOn[name] {
			errs = append(errs, s.syncDriverInstall(ctx, n, p, now))
		}
	}
	return errors.Join(errs...)
}

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
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
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

// syncDriverInstall plays the driver install inside driver pod p on node n.
// A pod whose version is loaded (the node's GFD label reports it, and no
// install of another version began since) is Ready at once, as the real
// driver container skips an install of the loaded version; any other
// starts installing (its status' startTime marks when) and after the
// install time is Ready, or crash-loops if its version is bad. Once a pod
// is Ready the node's GFD labels report its version.
func (s *Sim) syncDriverInstall(ctx context.Context, n *corev1.Node, p *corev1.Pod, now time.Time) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	version := DriverPodVersion(p)
	if version == "" {
		return nil
	}
	reported := n.Labels[v1alpha1.LabelGFDDriverFull]
	loaded := reported
	if n.Annotations[AnnotationDriverUnloaded] == "true" {
		loaded = ""
	}
	switch {
	case podReady(p):
		if reported != version {
			s.opts.Logf("nodesim: node %s: GFD reports driver %s", n.Name, version)
			return s.setLoaded(ctx, n.Name, version)
		}
		return nil
	case crashLooping(p):
		return s.keepCrashing(ctx, p, now)
	case p.Status.StartTime == nil && loaded == version:
		s.opts.Logf("nodesim: node %s: driver %s already loaded: pod %s Ready", n.Name, version, p.Name)
		return s.setPodStatus(ctx, p, realDriverPodStatus(p, driverPodRunning(now)))
	case p.Status.StartTime == nil:
		s.opts.Logf("nodesim: node %s: pod %s installing driver %s", n.Name, p.Name, version)
		if loaded != "" {
			// The driver container unloads the running driver's kernel
			// modules before it installs its own: whatever comes of this
			// install, the version GFD still reports is no longer loaded,
			// and going back to it (a rollback) installs it again.
			if err := s.updateNode(ctx, n.Name, func(n *corev1.Node) {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[AnnotationDriverUnloaded] = "true"
			}); err != nil {
				return err
			}
		}
		return s.setPodStatus(ctx, p, realDriverPodStatus(p, driverPodInstalling(now)))
	case now.Sub(p.Status.StartTime.Time) < s.opts.InstallTime:
		return nil
	case s.isBad(version):
		s.opts.Logf("nodesim: node %s: driver %s is marked bad: pod %s crash-loops", n.Name, version, p.Name)
		return s.setPodStatus(ctx, p, realDriverPodStatus(p, driverPodCrashing(now)))
	default:
		s.opts.Logf("nodesim: node %s: driver %s installed: pod %s Ready", n.Name, version, p.Name)
		if err := s.setPodStatus(ctx, p, realDriverPodStatus(p, driverPodRunning(now))); err != nil {
			return err
		}
		return s.setLoaded(ctx, n.Name, version)
	}
}

// setLoaded records on node that driver version runs: GFD's labels report
// it, and it is loaded.
func (s *Sim) setLoaded(ctx context.Context, node, version string) error {
	return s.updateNode(ctx, node, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k, v := range driverVersionLabels(version) {
			n.Labels[k] = v
		}
		delete(n.Annotations, AnnotationDriverUnloaded)
	})
}

// DriverPodVersion returns the driver version a GPU Operator driver pod
// installs, read from its driver container's image tag
// ("nvcr.io/nvidia/driver:580.95.05-ubuntu22.04" gives 580.95.05), or ""
// when p is not such a pod.
func DriverPodVersion(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name != DriverContainer {
			continue
		}
		_, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(tag, "-")
		if ValidateVersion(v) != nil {
			return ""
		}
		return v
	}
	return ""
}

// realDriverPodStatus fits a simulated driver status to the real pod:
// one status per container and init container of its spec, with the
// driver container's state from st, the others running (or completed).
func realDriverPodStatus(p *corev1.Pod, st corev1.PodStatus) corev1.PodStatus {
	driver := st.ContainerStatuses[0]
	ready := driver.Ready
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		cs := driver
		cs.Name, cs.Image = c.Name, c.Image
		if c.Name != DriverContainer && driver.State.Running == nil {
			// Sidecars wait for the driver container.
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			cs.Ready, cs.RestartCount = false, 0
		}
		cs.Ready = cs.Ready && ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	start := metav1.Now()
	if st.StartTime != nil {
		start = *st.StartTime
	}
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: start,
			}},
		})
	}
	st.HostIP = p.Status.HostIP
	st.PodIP = p.Status.PodIP
	st.QOSClass = p.Status.QOSClass
	return st
}

// setPodStatus writes st as p's status, unless p changed since it was read
// (the next pass looks again).
func (s *Sim) setPodStatus(ctx context.Context, p *corev1.Pod, st corev1.PodStatus) error {
	cp := p.DeepCopy()
	cp.Status = st
	if err := s.c.Status().Update(ctx, cp); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("driver pod %s: update status: %w", p.Name, err)
	}
	return nil
}

// crashRestarts is how many restarts a crash-looping driver pod reaches:
// past the GPU Operator's upgrade controller's limit (it fails a node
// whose driver pod restarted more than ten times), then no more writes.
const crashRestarts = 12

// keepCrashing plays the kubelet restarting a crash-looping driver
// container: one more restart every install time (the kubelet's back-off,
// compressed like the install itself), up to crashRestarts.
func (s *Sim) keepCrashing(ctx context.Context, p *corev1.Pod, now time.Time) error {
	st := p.Status.DeepCopy()
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.Name != DriverContainer || cs.RestartCount >= crashRestarts {
			continue
		}
		last := cs.LastTerminationState.Terminated
		if last != nil && now.Sub(last.FinishedAt.Time) < s.opts.InstallTime {
			return nil
		}
		cs.RestartCount++
		t := metav1.NewTime(now)
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: "could not load the NVIDIA kernel module (simulated)", StartedAt: t, FinishedAt: t,
		}}
		return s.setPodStatus(ctx, p, *st)
	}
	return nil
}
