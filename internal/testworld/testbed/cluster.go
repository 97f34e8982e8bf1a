package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is one running control plane (etcd + kube-apiserver), and its Flux
// controllers when the testbed was started with Flux.
type Cluster struct {
	// Name is the cluster's name and its kubeconfig context.
	Name string
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client using the testbed's scheme.
	Client client.Client
	// Kubeconfig is the path of a kubeconfig file for this cluster alone.
	Kubeconfig string
	// Dir holds the cluster's logs and Flux's storage.
	Dir string
	// Flux is nil unless the testbed was started with Flux (and the
	// cluster is not one of [Options.ArgoCD]).
	Flux *Flux
	// ArgoCD is nil unless the cluster is one of [Options.ArgoCD].
	ArgoCD *ArgoCD
	// Kube is kube-controller-manager and kube-scheduler; nil unless the
	// testbed was started with [Options.Kube].
	Kube *Kube
	// GPUOperator is nil until [Cluster.StartGPUOperator].
	GPUOperator *GPUOperator
	// NetworkOperator is nil until [Cluster.StartNetworkOperator].
	NetworkOperator *NetworkOperator
	// AuditLog is the API server's audit log; empty unless the testbed was
	// started with [Options.AuditLog].
	AuditLog string

	kwok *process
	bins Binaries
	env  *envtest.Environment
}

// clusterSpec is what startCluster needs.
type clusterSpec struct {
	name    string
	bins    Binaries
	dir     string
	crdDirs []string
	crds    []*apiextensionsv1.CustomResourceDefinition
	scheme  *runtime.Scheme
	timeout time.Duration
	audit   bool
	// disabledAPIs are Options.DisabledAPIs.
	disabledAPIs []string
}

// startCluster starts etcd and kube-apiserver and installs the CRDs.
func startCluster(spec clusterSpec) (*Cluster, error) {
	if err := os.MkdirAll(spec.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", spec.name, err)
	}
	apiLog, err := os.Create(filepath.Join(spec.dir, "kube-apiserver.log"))
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", spec.name, err)
	}
	apiPath, err := dieWithParent(spec.bins.Path(binKubeAPIServer), filepath.Join(spec.dir, "bin"))
	if err != nil {
		apiLog.Close()
		return nil, err
	}
	etcdPath, err := dieWithParent(spec.bins.Path(binEtcd), filepath.Join(spec.dir, "bin"))
	if err != nil {
		apiLog.Close()
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(spec.crds))
	for _, c := range spec.crds {
		// envtest writes to the objects it installs; keep the caller's intact.
		crds = append(crds, c.DeepCopy())
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    spec.bins.Dir,
		CRDDirectoryPaths:        spec.crdDirs,
		CRDs:                     crds,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   spec.scheme,
		ControlPlaneStartTimeout: spec.timeout,
		ControlPlaneStopTimeout:  30 * time.Second,
		// Explicit paths, so KUBEBUILDER_ASSETS or TEST_ASSET_* set for some
		// other project cannot swap in programs of another version.
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: apiPath, Out: apiLog, Err: apiLog},
			Etcd:      &envtest.Etcd{Path: etcdPath},
		},
	}
	var auditLog string
	if spec.audit {
		flags, path, err := auditFlags(spec.dir)
		if err != nil {
			apiLog.Close()
			return nil, fmt.Errorf("cluster %s: %w", spec.name, err)
		}
		args := env.ControlPlane.APIServer.Configure()
		for k, v := range flags {
			args.Set(k, v)
		}
		auditLog = path
	}
	if len(spec.disabledAPIs) > 0 {
		off := make([]string, len(spec.disabledAPIs))
		for i, gv := range spec.disabledAPIs {
			off[i] = gv + "=false"
		}
		env.ControlPlane.APIServer.Configure().Set("runtime-config", strings.Join(off, ","))
	}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after the processes are up (e.g. a bad CRD): stop them.
		stopErr := env.Stop()
		apiLog.Close()
		return nil, errors.Join(fmt.Errorf("start cluster %s: %w; kube-apiserver log tail:\n%s",
			spec.name, err, tailFile(apiLog.Name(), 20)), stopErr)
	}
	c := &Cluster{Name: spec.name, Config: cfg, Dir: spec.dir, env: env, bins: spec.bins, AuditLog: auditLog}
	c.Client, err = client.New(cfg, client.Options{Scheme: spec.scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cluster %s: client: %w", spec.name, err), c.stopControlPlane())
	}
	c.Kubeconfig = filepath.Join(spec.dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, []string{spec.name}, map[string]*rest.Config{spec.name: cfg}, spec.name); err != nil {
		return nil, errors.Join(err, c.stopControlPlane())
	}
	return c, nil
}

// EnsureNamespace creates the namespace name unless it exists.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster %s: create namespace %s: %w", c.Name, name, err)
	}
	return nil
}

// startKubelet starts what runs pods on c's nodes: kube-controller-manager
// and kube-scheduler (kube) and kwok as the simulated nodes' kubelet
// (kwok), and with kwok the cluster's system node (see [SystemNode]).
func (c *Cluster) startKubelet(ctx context.Context, kube, kwok bool) error {
	var err error
	if kube {
		if c.Kube, err = startKube(ctx, c.bins, c); err != nil {
			return err
		}
	}
	if kwok {
		if c.kwok, err = startKwok(ctx, c.bins, c); err != nil {
			return err
		}
		return c.createSystemNode(ctx)
	}
	return nil
}

// LogTail returns the last n lines of the logs of the programs that run
// beside c's control plane (Flux or Argo CD, controller-manager,
// scheduler, kwok, the GPU and Network Operators).
func (c *Cluster) LogTail(n int) string {
	var b strings.Builder
	b.WriteString(c.Flux.LogTail(n))
	b.WriteString(c.ArgoCD.LogTail(n))
	b.WriteString(c.Kube.LogTail(n))
	if c.kwok != nil {
		fmt.Fprintf(&b, "--- kwok (%s) ---\n%s\n", c.kwok.logPath, c.kwok.tail(n))
	}
	b.WriteString(c.GPUOperator.LogTail(n))
	b.WriteString(c.NetworkOperator.LogTail(n))
	return b.String()
}

// stopPrograms stops what runs beside the control plane, those that write
// the most first: the GPU and Network Operators, Flux or Argo CD, kwok,
// then the scheduler and the controller-manager.
func (c *Cluster) stopPrograms() error {
	errs := []error{c.GPUOperator.stop(), c.NetworkOperator.stop(), c.Flux.stop(), c.ArgoCD.stop()}
	if c.kwok != nil {
		errs = append(errs, c.kwok.stop(5*time.Second))
	}
	errs = append(errs, c.Kube.stop())
	return errors.Join(errs...)
}

// stopControlPlane stops kube-apiserver and etcd.
func (c *Cluster) stopControlPlane() error {
	if c.env == nil {
		return nil
	}
	err := c.env.Stop()
	if out, ok := c.env.ControlPlane.APIServer.Out.(*os.File); ok {
		out.Close()
	}
	c.env = nil
	if err != nil {
		return fmt.Errorf("stop cluster %s: %w", c.Name, err)
	}
	return nil
}
