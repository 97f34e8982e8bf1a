package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/config"
)

// ControllerOptions say how to run gpufleet-controller for one cluster.
type ControllerOptions struct {
	// Binary is the gpufleet-controller program to run (built from the
	// work tree: the testbed plays every image tag with it).
	Binary string
	// Flags come after the Deployment's arguments (a later flag wins):
	// timings the testbed shortens, e.g. --drain-retry.
	Flags []string
	// Poll is how often the Deployment is read; 250ms when zero.
	Poll time.Duration
}

// ControllerStart is one start of the controller's process: the pod
// template it plays.
type ControllerStart struct {
	// Image is the Deployment's controller image at the start.
	Image string
	// Args and Env are what the process was given.
	Args []string
	Env  map[string]string
	At   time.Time
	// Restart: the process before exited on its own (it lost its leader
	// lease on a slow API server, say) and was started again with the same
	// pod template, as the kubelet restarts a container of a running pod.
	Restart bool
}

// Controller is one cluster's gpufleet-controller, run out of cluster as
// a process configured from the Deployment render wrote and Flux applied.
// The Deployment's own pods, run by kwok, are never real processes; this
// one is, and it is replaced when the Deployment's pod template changes.
type Controller struct {
	mu     sync.Mutex
	starts []ControllerStart
	proc   *process
	// metrics is the running process's /metrics; past holds what each
	// replaced process's said just before it was stopped.
	metrics string
	past    []map[string]*dto.MetricFamily
}

// Counter sums the samples of counter name whose label has value, over
// every process the controller ran: each replaced one as its /metrics said
// just before it was stopped, and the running one now. A counter of one
// process starts at zero; the sum is what one process running throughout
// would have counted.
func (c *Controller) Counter(name, label, value string) float64 {
	c.mu.Lock()
	families := append([]map[string]*dto.MetricFamily(nil), c.past...)
	url := c.metrics
	c.mu.Unlock()
	if url != "" {
		if mf, err := scrape(url); err == nil {
			families = append(families, mf)
		}
	}
	var sum float64
	for _, mfs := range families {
		mf := mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// scrape reads a /metrics endpoint.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Starts are the process's starts so far, in order.
func (c *Controller) Starts() []ControllerStart {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ControllerStart(nil), c.starts...)
}

// exited reports whether the running process ended on its own.
func (c *Controller) exited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil && c.proc.exited()
}

// Running reports whether a process runs.
func (c *Controller) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil && !c.proc.exited()
}

// LogTail returns the last n lines of the running process's log.
func (c *Controller) LogTail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return ""
	}
	return fmt.Sprintf("--- gpufleet-controller (%s) ---\n%s\n", c.proc.logPath, c.proc.tail(n))
}

// RunControllerFromDeployment runs gpufleet-controller for c as its
// Deployment (gpufleet-system/gpufleet-controller, as render writes it)
// says, until ctx ends: it starts the process once the Deployment exists,
// replaces it whenever the Deployment's pod template changes (a new
// version), as a rolling update would: the new process starts before the
// old one is stopped, and leader election hands the work over. A process
// that exits on its own (controller-runtime exits when it loses its
// leader lease) is started again, as the kubelet restarts a container. It stops
// the process when the Deployment is deleted. The process reaches the API
// server as the Deployment's service account (the testbed's admin
// impersonates it), so it has exactly the rights of the rendered RBAC.
//
// onError is told of a start that failed; the next template change, or
// the next poll, tries again.
func (c *Cluster) RunControllerFromDeployment(ctx context.Context, opts ControllerOptions, onError func(error)) *Controller {
	ctl := &Controller{}
	if opts.Poll == 0 {
		opts.Poll = 250 * time.Millisecond
	}
	go func() {
		var running *appsv1.Deployment
		defer ctl.replace(nil, "")
		tick := time.NewTicker(opts.Poll)
		defer tick.Stop()
		// A process that exits on its own is started again after a back-off
		// that doubles while it keeps exiting soon after its start, as the
		// kubelet's does (shorter: a test waits on it).
		backoff, exitedAt := time.Second, time.Time{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			dep := &appsv1.Deployment{}
			err := c.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: config.Deployment}, dep)
			switch {
			case apierrors.IsNotFound(err):
				if running != nil {
					ctl.replace(nil, "")
					running = nil
				}
				continue
			case err != nil:
				continue
			}
			restart := false
			if running != nil && reflect.DeepEqual(running.Spec.Template, dep.Spec.Template) {
				if !ctl.exited() {
					continue
				}
				if exitedAt.IsZero() {
					exitedAt = time.Now()
				}
				if time.Since(exitedAt) < backoff {
					continue
				}
				restart = true
				if starts := ctl.Starts(); time.Since(starts[len(starts)-1].At) < 10*backoff {
					backoff = min(2*backoff, 30*time.Second)
				} else {
					backoff = time.Second
				}
			}
			exitedAt = time.Time{}
			p, start, metrics, err := c.startController(dep, opts, len(ctl.Starts())+1)
			if err != nil {
				if ctx.Err() == nil && onError != nil {
					onError(err)
				}
				continue
			}
			start.Restart = restart
			ctl.mu.Lock()
			ctl.starts = append(ctl.starts, start)
			ctl.mu.Unlock()
			ctl.replace(p, metrics)
			running = dep
		}
	}()
	return ctl
}

// replace makes p (serving its metrics at metrics) the running process
// and stops the one it replaces, keeping what its metrics said last.
func (c *Controller) replace(p *process, metrics string) {
	c.mu.Lock()
	old, oldMetrics := c.proc, c.metrics
	c.proc, c.metrics = p, metrics
	c.mu.Unlock()
	if old == nil {
		return
	}
	if mf, err := scrape(oldMetrics); err == nil {
		c.mu.Lock()
		c.past = append(c.past, mf)
		c.mu.Unlock()
	}
	_ = old.stop(10 * time.Second)
}

// startController starts one process as dep says and waits until it
// serves its readiness probe; metrics is its /metrics URL.
func (c *Cluster) startController(dep *appsv1.Deployment, opts ControllerOptions, n int) (p *process, start ControllerStart, metrics string, err error) {
	cmd, err := DeploymentCommand(dep, config.Container)
	if err != nil {
		return nil, ControllerStart{}, "", fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	image := ""
	for _, ctr := range dep.Spec.Template.Spec.Containers {
		if ctr.Name == config.Container {
			image = ctr.Image
		}
	}
	dir := filepath.Join(c.Dir, "gpufleet-controller")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := ServiceAccountKubeconfig(c.Config, kubeconfig, dep.Namespace, dep.Spec.Template.Spec.ServiceAccountName); err != nil {
		return nil, ControllerStart{}, "", err
	}
	health, err := freePort()
	if err != nil {
		return nil, ControllerStart{}, "", err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, ControllerStart{}, "", err
	}
	args := append(cmd.Args,
		"--kubeconfig="+kubeconfig,
		// What the kubelet gives a pod and a process out of cluster lacks:
		// the pod's namespace (the lease's, from the service account's
		// files). Ports: one process per cluster shares this machine.
		"--leader-election-namespace="+dep.Namespace,
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(health),
	)
	args = append(args, opts.Flags...)
	p, err = startProcess("gpufleet-controller", opts.Binary, args, environ(cmd.Env), filepath.Join(dir, fmt.Sprintf("gpufleet-controller-%02d.log", n)))
	if err != nil {
		return nil, ControllerStart{}, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := waitReady(ctx, p, "http://127.0.0.1:"+strconv.Itoa(health)+"/readyz"); err != nil {
		return nil, ControllerStart{}, "", errors.Join(fmt.Errorf("cluster %s: gpufleet-controller: %w\n%s", c.Name, err, p.tail(20)), p.stop(5*time.Second))
	}
	return p, ControllerStart{Image: image, Args: args, Env: cmd.Env, At: time.Now()}, "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics", nil
}

// ServiceAccountKubeconfig writes to path a kubeconfig that reaches cfg's
// API server as service account ns/name, impersonated by cfg's user (the
// testbed's admin): a program run with it has exactly the rights RBAC
// gives that service account.
func ServiceAccountKubeconfig(cfg *rest.Config, path, ns, name string) error {
	if name == "" {
		name = "default"
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testbed"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Impersonate: "system:serviceaccount:" + ns + ":" + name,
	}
	kc.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: "sa"}
	kc.CurrentContext = "testbed"
	return clientcmd.WriteToFile(*kc, path)
}

var controllerBuild struct {
	mu   sync.Mutex
	path string
}

// buildTemp is the temporary folder of the process as it started: a test
// that sets TMPDIR to a folder of its own (the end-to-end suite does, for
// Flux's controllers) would otherwise get the build removed with that
// folder when it ends, under the next test that runs the controller.
var buildTemp = os.TempDir()

// BuildController builds cmd/gpufleet-controller from the module at root,
// once per process (again only if the program was removed), and returns
// the program's path: the testbed runs it for every version a Deployment
// names.
func BuildController(root string) (string, error) {
	controllerBuild.mu.Lock()
	defer controllerBuild.mu.Unlock()
	if controllerBuild.path != "" {
		if _, err := os.Stat(controllerBuild.path); err == nil {
			return controllerBuild.path, nil
		}
	}
	dir, err := os.MkdirTemp(buildTemp, "gpufleet-controller-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "gpufleet-controller")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/gpufleet-controller")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gpufleet-controller: %w\n%s", err, out)
	}
	controllerBuild.path = path
	return path, nil
}
