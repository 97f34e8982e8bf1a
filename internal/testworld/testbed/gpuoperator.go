package testbed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const binGPUOperator = "gpu-operator"

// gpuOperatorAssetsDir is the folder, in the testbed programs' folder, that
// holds the GPU Operator's state manifests as it expects them under
// /opt/gpu-operator (assets/* and manifests/ of the operator's module).
const gpuOperatorAssetsDir = "gpu-operator-assets"

// gpuOperatorMountPoint is where the operator reads its state manifests: a
// path compiled into it (within its private root, see StartGPUOperator).
const gpuOperatorMountPoint = "/opt/gpu-operator"

// CheckGPUOperator reports whether the GPU Operator and its state manifests
// are present, and whether this machine can give it a private mount
// namespace (it reads its manifests from a fixed path under /opt, which the
// testbed must not write on the host).
func (b Binaries) CheckGPUOperator() error {
	if err := b.check(binGPUOperator); err != nil {
		return err
	}
	for _, d := range []string{"state-driver", "manifests/state-driver"} {
		if info, err := os.Stat(filepath.Join(b.Dir, gpuOperatorAssetsDir, d)); err != nil || !info.IsDir() {
			return fmt.Errorf("%w: the GPU Operator's state manifests (%s) are not in %s: run `make testbin`",
				ErrMissingBinaries, d, filepath.Join(b.Dir, gpuOperatorAssetsDir))
		}
	}
	for _, tool := range []string{"unshare", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the GPU Operator needs %s(1) for a private root: %w", tool, err)
		}
	}
	return nil
}

// GPUOperatorOptions say how to run the GPU Operator for one cluster.
type GPUOperatorOptions struct {
	// Namespace and Deployment name the operator's Deployment as its chart
	// installed it ("gpu-operator"/"gpu-operator" when empty). The process
	// gets that Deployment's container environment and arguments, so what
	// runs is configured by the chart version the cluster was given, not by
	// a copy kept here.
	Namespace, Deployment string
}

// GPUOperator is one cluster's NVIDIA GPU Operator, run out of cluster as a
// subprocess with the cluster admin's kubeconfig.
type GPUOperator struct {
	// Env is the environment the operator was started with, from its
	// Deployment (tests check it, and logs show it).
	Env map[string]string
	// Args are the arguments it was started with.
	Args []string

	proc *process
}

// StartGPUOperator starts the GPU Operator for c, configured as the
// operator's Deployment in the cluster says (see [GPUOperatorOptions]): that
// Deployment must exist, so call this once the operator's chart has been
// applied (by Flux, say). The Deployment's own pod, run by kwok, is never a
// real process; this one is.
//
// The operator reads files at paths compiled into it: its state manifests
// under /opt/gpu-operator, and what its Deployment mounts from the host
// (/host-etc/os-release). So it runs in a private mount namespace, chrooted
// into a root of its own (a tmpfs) holding just those: the binary, the
// kubeconfig, the testbed's copy of the manifests at /opt/gpu-operator, the
// Deployment's hostPath mounts at their mount paths, /proc, /dev and /tmp.
// Nothing on the host is written.
func (c *Cluster) StartGPUOperator(ctx context.Context, opts GPUOperatorOptions) (*GPUOperator, error) {
	if c.GPUOperator != nil {
		return nil, fmt.Errorf("cluster %s: the GPU Operator runs already", c.Name)
	}
	if err := c.bins.CheckGPUOperator(); err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		opts.Namespace = "gpu-operator"
	}
	if opts.Deployment == "" {
		opts.Deployment = "gpu-operator"
	}
	dep := &appsv1.Deployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Deployment}, dep); err != nil {
		return nil, fmt.Errorf("cluster %s: the GPU Operator's Deployment: %w", c.Name, err)
	}
	cmd, err := DeploymentCommand(dep, "gpu-operator")
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append(cmd.Args,
		"--kubeconfig=/kube/kubeconfig",
		// The chart asks for leader election, whose Lease namespace
		// controller-runtime reads from the pod's service account files, which
		// do not exist out of cluster; with one operator per cluster it
		// changes nothing. A later flag wins.
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(health),
	)
	dir := filepath.Join(c.Dir, "gpu-operator")
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	mounts := []bindMount{
		{from: c.bins.Path(binGPUOperator), to: "/bin/gpu-operator"},
		{from: c.Kubeconfig, to: "/kube/kubeconfig"},
		{from: filepath.Join(c.bins.Dir, gpuOperatorAssetsDir), to: gpuOperatorMountPoint, dir: true},
	}
	for _, m := range cmd.HostMounts {
		info, err := os.Stat(m.HostPath)
		if err != nil {
			// The kubelet would fail the pod; say so rather than run it blind.
			return nil, fmt.Errorf("cluster %s: the operator's Deployment mounts %s from the host: %w", c.Name, m.HostPath, err)
		}
		mounts = append(mounts, bindMount{from: m.HostPath, to: m.MountPath, dir: info.IsDir()})
	}
	set := map[string]string{"KUBECONFIG": "/kube/kubeconfig"}
	maps.Copy(set, cmd.Env)
	unshareArgs := append([]string{"--mount", "--propagation", "private", "--",
		"sh", "-c", chrootScript(root, mounts), "gpu-operator", "/bin/gpu-operator"}, args...)
	p, err := startProcess(binGPUOperator, "unshare", unshareArgs, environ(set), filepath.Join(dir, "gpu-operator.log"))
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, "http://127.0.0.1:"+strconv.Itoa(health)+"/readyz"); err != nil {
		return nil, errors.Join(fmt.Errorf("cluster %s: %w", c.Name, err), p.stop(10*time.Second))
	}
	c.GPUOperator = &GPUOperator{Env: cmd.Env, Args: args, proc: p}
	return c.GPUOperator, nil
}

// StartGPUOperatorWhenApplied waits until the GPU Operator's chart has been
// applied to c (its Deployment exists and its ClusterPolicy and
// NVIDIADriver CRDs are established), then starts the operator as
// [Cluster.StartGPUOperator] does. It returns when the operator runs, or
// when ctx ends. Flux applying the chart in the background is the use.
func (c *Cluster) StartGPUOperatorWhenApplied(ctx context.Context, opts GPUOperatorOptions) (*GPUOperator, error) {
	ns, name := cmp.Or(opts.Namespace, "gpu-operator"), cmp.Or(opts.Deployment, "gpu-operator")
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster %s: the GPU Operator's chart was never applied: %w", c.Name, ctx.Err())
		case <-tick.C:
		}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{}); err != nil {
			continue
		}
		if c.established(ctx, "clusterpolicies.nvidia.com") && c.established(ctx, "nvidiadrivers.nvidia.com") {
			return c.StartGPUOperator(ctx, opts)
		}
	}
}

// established reports whether the CRD name is established in c.
func (c *Cluster) established(ctx context.Context, name string) bool {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// bindMount is a file or folder of the host seen at another path in the
// operator's private root.
type bindMount struct {
	from, to string
	dir      bool
}

// chrootScript is the shell script that, run by unshare in a new mount
// namespace, builds the private root at root and execs the program given as
// its arguments inside it. unshare does not fork, and sh and chroot exec, so
// the pid the testbed started is the operator's: signals and the
// parent-death signal reach it.
func chrootScript(root string, mounts []bindMount) string {
	q := func(p string) string { return shellQuote(filepath.Join(root, p)) }
	lines := []string{
		"set -e",
		"mount -t tmpfs -o mode=0755 gpufleet-testbed " + shellQuote(root),
		"mkdir -p " + q("proc") + " " + q("dev") + " " + q("tmp"),
		"mount --rbind /proc " + q("proc"),
		"mount --rbind /dev " + q("dev"),
		"mount -t tmpfs gpufleet-testbed-tmp " + q("tmp"),
	}
	for _, m := range mounts {
		if m.dir {
			lines = append(lines, "mkdir -p "+q(m.to))
		} else {
			lines = append(lines, "mkdir -p "+q(filepath.Dir(m.to)), "touch "+q(m.to))
		}
		lines = append(lines, "mount --bind -o ro "+shellQuote(m.from)+" "+q(m.to))
	}
	lines = append(lines, "exec chroot "+shellQuote(root)+` "$@"`)
	return strings.Join(lines, "\n")
}

// PodCommand is what the kubelet would give a container's process, as far
// as an out-of-cluster run can reproduce it.
type PodCommand struct {
	// Env is the container's environment.
	Env map[string]string
	// Args are its arguments.
	Args []string
	// HostMounts are its hostPath volumes and where it sees them.
	HostMounts []HostMount
}

// HostMount is a hostPath volume mounted into a container.
type HostMount struct {
	HostPath, MountPath string
}

// DeploymentCommand returns the environment, arguments and host mounts of
// the container named container in dep's pod template, as the kubelet
// would give them to the process: literal values as they are, fieldRef
// metadata.namespace as the Deployment's namespace, hostPath volumes at
// their mount paths. Other sources (Secrets, ConfigMaps, resource fields,
// other volume kinds) are refused rather than guessed.
func DeploymentCommand(dep *appsv1.Deployment, container string) (PodCommand, error) {
	spec := dep.Spec.Template.Spec
	var ctr *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == container {
			ctr = &spec.Containers[i]
		}
	}
	if ctr == nil {
		return PodCommand{}, fmt.Errorf("deployment %s/%s has no container %q", dep.Namespace, dep.Name, container)
	}
	cmd := PodCommand{Env: map[string]string{}, Args: append([]string(nil), ctr.Args...)}
	var errs []error
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			cmd.Env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			cmd.Env[e.Name] = dep.Namespace
		default:
			errs = append(errs, fmt.Errorf("deployment %s/%s: env %s: only values and metadata.namespace are supported out of cluster",
				dep.Namespace, dep.Name, e.Name))
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range ctr.VolumeMounts {
		v := volumes[vm.Name]
		if v.HostPath == nil {
			errs = append(errs, fmt.Errorf("deployment %s/%s: volume %s: only hostPath volumes are supported out of cluster",
				dep.Namespace, dep.Name, vm.Name))
			continue
		}
		cmd.HostMounts = append(cmd.HostMounts, HostMount{HostPath: v.HostPath.Path, MountPath: vm.MountPath})
	}
	return cmd, errors.Join(errs...)
}

// LogTail returns the last n lines of the operator's log.
func (o *GPUOperator) LogTail(n int) string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("--- gpu-operator (%s) ---\n%s\n", o.proc.logPath, o.proc.tail(n))
}

// Log returns the path of the operator's log.
func (o *GPUOperator) Log() string { return o.proc.logPath }

func (o *GPUOperator) stop() error {
	if o == nil {
		return nil
	}
	return o.proc.stop(10 * time.Second)
}
