package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/internal/controller"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// PlaceholderCharts is the chart repository a story's fleet file names; Start
// replaces it with the absolute path of ../shared/operators.
const PlaceholderCharts = `"../shared/operators"`

// PlaceholderRepository is the fleet repository a story's fleet file names
// in [gitops] for its clusters on Argo CD; Start replaces it with the URL
// of the repository on the testbed's git server.
const PlaceholderRepository = `"http://lab.invalid/fleet.git"`

// ErrNoOperatorCharts says the real GPU Operator charts are not in
// ../shared/operators beside the repository.
var ErrNoOperatorCharts = errors.New("the real GPU Operator charts are not in ../shared/operators beside the repository")

// Options configure Start.
type Options struct {
	// Root is the repository root: the DriverRollout CRD in
	// config/crd/bases, and the real operator charts in ../shared/operators
	// beside it. "." when empty.
	Root string
	// Dir holds the testbed (kubeconfig, logs) and the fleet repository's
	// work tree (Dir/fleet); a temporary folder when empty.
	Dir string
	// Clusters are the clusters to start, each a kubeconfig context.
	Clusters []string
	// FleetTOML is the story's fleet file, naming [PlaceholderCharts] as its
	// chart repository.
	FleetTOML []byte
	// ChartVersion is the GPU Operator chart the story needs in
	// ../shared/operators: the version of the real operator the testbed runs.
	ChartVersion string
	// Pool is each cluster's pool of simulated GPU nodes. With Pool.DRA,
	// each cluster also runs NVIDIA's DRA driver as nodesimtest.DRADriver
	// installs it.
	Pool nodesim.Pool
	// BadDrivers are driver versions whose install never succeeds on the
	// simulated nodes.
	BadDrivers []string
	// NetworkOperator, when set, is the NVIDIA Network Operator version
	// (a chart in ../shared/operators) each cluster runs as the testbed
	// plays it (testbed.Cluster.StartNetworkOperator): its NicClusterPolicy
	// CRD, k8s-operator-libs' real OFED upgrade controller, and the played
	// step that turns the NicClusterPolicy into the OFED DaemonSet. The
	// pool's nodes need Pool.ManagedNICs for the DaemonSet to select them.
	NetworkOperator string
	// BadOFED are OFED driver versions that never come up on the
	// simulated nodes.
	BadOFED []string
	// StackCRDs also runs the real notification-controller in every
	// cluster, with the image automation and notification CRDs, where the
	// testbed has them built: it makes the serving stack's push Receiver
	// Ready, and the Flux controllers send it their events (the image
	// automation objects are only applied: no controller acts on them
	// here); [World.StackCRDs] says whether they were.
	StackCRDs bool
	// SourceInterval is how often source-controller polls the fleet
	// repository; [SourceInterval] when zero.
	SourceInterval time.Duration
	// RootInterval is the interval of each cluster's root Kustomization
	// (the one "flux bootstrap" would create, which applies the rendered
	// flux-*.yaml and repairs drift of them); [RootInterval] when zero.
	RootInterval time.Duration
	// Record, when set, has a [Recorder] sample each cluster this often
	// while the world runs ([World.Recorders]).
	Record time.Duration
	// GitUser names the fleet repository's committer ("gpufleet <user>",
	// <user>@gpufleet.invalid); "lab" when empty.
	GitUser string
	// NoController leaves gpufleet-controller out: the GPU Operator's own
	// upgrade controller alone moves the nodes (a measurement of it).
	//
	// Otherwise, where the fleet file names the controller's version,
	// render installs it and Flux applies it: the world runs it as the
	// applied Deployment says, as a process, replaced when a new version
	// arrives ([World.Controllers]). A fleet file that names none installs
	// it by hand: the world runs it in this process, as such an install
	// would, with the DriverRollout CRD installed at start.
	NoController bool
	// ControllerTransport, when set, wraps the controller's transport to
	// the API server, e.g. to count its requests.
	ControllerTransport func(http.RoundTripper) http.RoundTripper
	// AuditLog has each API server write an audit log (see
	// [testbed.Cluster.Requests]), to count each program's requests.
	AuditLog bool
	// OnError, when set, is told of failures of what runs in the
	// background (the GPU Operator, a controller) while the world is up.
	OnError func(error)
}

// World is a running story: the testbed, what runs beside it and the fleet
// repository's work tree.
type World struct {
	// Testbed is the clusters and the git server.
	Testbed *testbed.Testbed
	// Dir is the fleet repository's work tree; FleetFile its fleet.toml.
	Dir, FleetFile string
	// Operators is the absolute path of the real operator charts.
	Operators string
	// Sims are each cluster's node agent.
	Sims map[string]*nodesim.Sim
	// StackCRDs says notification-controller runs and the serving stack's
	// image automation and notification CRDs are installed.
	StackCRDs bool
	// Recorders sample each cluster while the world runs, when
	// [Options.Record] asked for them.
	Recorders map[string]*Recorder
	// Controllers are each cluster's gpufleet-controller process, run as
	// the Deployment Flux applied from the rendered folder says: where the
	// fleet file names the controller's version (see [Options]).
	Controllers map[string]*testbed.Controller

	clusters []string
	// argo are the clusters on Argo CD, as the fleet file says: the
	// testbed runs Argo CD instead of Flux for them.
	argo          map[string]bool
	poolNodes     int
	controllerBin string
	rootInterval  time.Duration
	bg            context.Context
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// CheckPrograms reports whether the testbed programs the story needs (make
// testbin) are there, the real GPU Operator among them.
func CheckPrograms() error {
	bins, err := testbed.FindBinaries()
	if err != nil {
		return err
	}
	return bins.CheckGPUOperator()
}

// StoryOptions are the options of the story's world ([FleetStory]): its
// two clusters of [PoolNodes] nodes on the stable driver, the drill's
// driver bad, the story's fleet file and a recorder per cluster. The demo
// and the end-to-end suite add where it runs (Root, Dir) and who commits.
func StoryOptions() Options {
	return Options{
		Clusters: StoryClusters(), FleetTOML: StoryFleet(), ChartVersion: ChartVersion,
		Pool:       nodesim.Pool{Name: PoolName, Product: Product, Nodes: PoolNodes, Driver: DriverStable},
		BadDrivers: []string{DriverDrill}, Record: 200 * time.Millisecond,
	}
}

// Start starts the world of o (see the package documentation). On error
// everything started is stopped.
//
// The in-process controllers log nothing and the git server's request log
// is dropped (controller-runtime's and the standard logger, for the whole
// process): a world's Events, status and [World.Dump] are what tells what
// happened, and their logs would drown a step's own.
func Start(ctx context.Context, o Options) (w *World, err error) {
	if o.Root == "" {
		o.Root = "."
	}
	if o.GitUser == "" {
		o.GitUser = "lab"
	}
	if o.SourceInterval == 0 {
		o.SourceInterval = SourceInterval
	}
	if o.RootInterval == 0 {
		o.RootInterval = RootInterval
	}
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	operators, err := filepath.Abs(filepath.Join(o.Root, "..", "shared", "operators"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(operators, "gpu-operator", o.ChartVersion)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoOperatorCharts, err)
	}
	if err := CheckPrograms(); err != nil {
		return nil, err
	}
	bins, err := testbed.FindBinaries()
	if err != nil {
		return nil, err
	}
	// Flux applies the GPU Operator's own CRDs (the manifests mode renders
	// them), and gpufleet's where render installs the controller; else the
	// testbed installs the DriverRollout CRD, as the hand-applied install
	// manifests would.
	fromFleet, argo := fleetFacts(o.FleetTOML)
	var crds []string
	if !fromFleet {
		crds = append(crds, filepath.Join(o.Root, "config", "crd", "bases"))
	}
	var controllerBin string
	if fromFleet && !o.NoController && o.ControllerTransport == nil {
		if controllerBin, err = testbed.BuildController(o.Root); err != nil {
			return nil, err
		}
	}
	// The serving stack's push Receiver is made Ready by the real
	// notification-controller, which also installs the image automation
	// CRDs; without its programs the stack is left out.
	stack := o.StackCRDs && bins.CheckFluxImage() == nil
	tb, err := testbed.Start(ctx, testbed.Options{
		Clusters: o.Clusters, CRDDirs: crds, ArgoCD: argo,
		Flux: true, Notification: stack, Git: true, Kube: true, Kwok: true,
		Dir: o.Dir, StartTimeout: 3 * time.Minute, AuditLog: o.AuditLog,
	})
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	w = &World{Testbed: tb, Operators: operators, Sims: map[string]*nodesim.Sim{}, StackCRDs: stack,
		Recorders: map[string]*Recorder{}, Controllers: map[string]*testbed.Controller{}, controllerBin: controllerBin, clusters: o.Clusters, poolNodes: o.Pool.Nodes, rootInterval: o.RootInterval,
		argo: map[string]bool{},
		bg:   bg, cancel: cancel}
	for _, c := range argo {
		w.argo[c] = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.Stop())
		}
	}()
	report := func(err error) {
		if err != nil && bg.Err() == nil && o.OnError != nil {
			o.OnError(err)
		}
	}
	for _, name := range o.Clusters {
		if err := w.startCluster(ctx, name, o, report); err != nil {
			return w, fmt.Errorf("cluster %s: %w", name, err)
		}
	}
	if err := w.startRepo(ctx, o); err != nil {
		return w, err
	}
	if o.Record > 0 {
		for _, name := range o.Clusters {
			rec := NewRecorder(w.Client(name), time.Now())
			w.Recorders[name] = rec
			w.Go(func(ctx context.Context) { rec.Run(ctx, o.Record) })
		}
	}
	return w, nil
}

// startCluster starts what runs beside one cluster: kwok is the nodes'
// kubelet, the node agent plays NFD/GFD and the driver install inside the
// real operator's driver pods; the real GPU Operator starts once Flux has
// applied its chart (it is configured by the Deployment that chart version
// installs); and the lifecycle controller.
func (w *World) startCluster(ctx context.Context, name string, o Options, report func(error)) error {
	c := w.Testbed.Cluster(name)
	// The node agent publishes a DRA pool's ResourceSlices through a
	// clientset, as a kubelet plugin does.
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	sim := nodesim.New(c.Client, nodesim.Options{BadDrivers: o.BadDrivers, InstallTime: time.Second,
		BadOFED: o.BadOFED, OFEDInstallTime: time.Second, Kube: kube})
	if _, err := sim.AddPool(ctx, o.Pool); err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	w.Sims[name] = sim
	w.Go(func(ctx context.Context) { _ = sim.Run(ctx) })
	if o.Pool.DRA {
		// NVIDIA's DRA driver as its chart installs it: the device
		// classes, and the kubelet plugin's DaemonSet, whose pods the node
		// agent plays.
		if err := nodesimtest.DRADriver(ctx, c.Client); err != nil {
			return fmt.Errorf("DRA driver: %w", err)
		}
	}
	if o.NetworkOperator != "" {
		crd := filepath.Join(w.Operators, "network-operator", o.NetworkOperator, "deployment", "network-operator", "crds", "mellanox.com_nicclusterpolicies.yaml")
		if _, err := c.StartNetworkOperator(ctx, testbed.NetworkOperatorOptions{CRDPaths: []string{crd}, Requeue: time.Second}); err != nil {
			return fmt.Errorf("network operator: %w", err)
		}
	}
	w.Go(func(ctx context.Context) {
		if _, err := c.StartGPUOperatorWhenApplied(ctx, testbed.GPUOperatorOptions{}); err != nil {
			report(fmt.Errorf("cluster %s: %w", name, err))
		}
	})
	if o.NoController {
		return nil
	}
	if w.controllerBin != "" {
		w.Controllers[name] = c.RunControllerFromDeployment(w.bg, testbed.ControllerOptions{
			Binary: w.controllerBin,
			// The testbed's timings, after the Deployment's own flags: drains
			// retried and soaks polled in a fraction of a second, and a lease
			// short enough that a replaced process's successor takes over at
			// once.
			Flags: []string{"--drain-retry=300ms", "--health-poll=1s",
				"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms"},
		}, report)
		return nil
	}
	cfg := rest.CopyConfig(c.Config)
	// The user agent the gpufleet-controller program sends (client-go's
	// default names the program), so that the API server's audit log tells
	// the controller's requests from the rest of this process's.
	cfg.UserAgent = "gpufleet-controller/lab (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if o.ControllerTransport != nil {
		cfg.Wrap(o.ControllerTransport)
	}
	mgr, err := controller.NewManager(w.bg, cfg, controller.Options{
		MetricsAddr: "0", ProbeAddr: "0", DrainRetry: 300 * time.Millisecond, HealthPoll: time.Second,
		SkipNameValidation: true,
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	w.Go(func(ctx context.Context) {
		if err := mgr.Start(ctx); err != nil {
			report(fmt.Errorf("cluster %s: controller: %w", name, err))
		}
	})
	return nil
}

// startRepo creates the fleet repository (an empty repository on the git
// server and a work tree with the real git in it, holding the fleet file)
// and what "flux bootstrap" would create in each cluster on Flux: the
// source and the root Kustomization applying clusters/<name>. A cluster on
// Argo CD is bootstrapped by a step of the story, once the folder is
// pushed ([Play.Bootstrap]), as a person would.
func (w *World) startRepo(ctx context.Context, o Options) error {
	tb := w.Testbed
	w.Dir = filepath.Join(tb.Dir, "fleet")
	repo, err := tb.Git.NewRepo("fleet.git", "main", w.Dir)
	if err != nil {
		return err
	}
	src := bytes.Replace(o.FleetTOML, []byte(PlaceholderCharts), []byte(strconv.Quote(w.Operators)), 1)
	src = bytes.Replace(src, []byte(PlaceholderRepository), []byte(strconv.Quote(repo.URL)), 1)
	w.FleetFile = filepath.Join(w.Dir, "fleet.toml")
	if err := os.WriteFile(w.FleetFile, src, 0o644); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "gpufleet " + o.GitUser}, {"user.email", o.GitUser + "@gpufleet.invalid"}, {"commit.gpgsign", "false"}} {
		if _, err := w.git("config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	for _, name := range o.Clusters {
		if w.argo[name] {
			continue
		}
		c := tb.Cluster(name)
		if err := c.ApplySync(ctx, testbed.Sync{Name: "flux-system", URL: repo.URL, Path: "./clusters/" + name, Interval: o.SourceInterval}); err != nil {
			return err
		}
		if o.RootInterval == o.SourceInterval {
			continue
		}
		if err := testbed.Update(ctx, c.Client, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", testbed.FluxNamespace, "flux-system", false, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, o.RootInterval.String(), "spec", "interval")
		}); err != nil {
			return err
		}
	}
	return nil
}

// Go runs fn beside the testbed until the world stops; Stop cancels its
// context and waits for it before stopping the testbed.
func (w *World) Go(fn func(ctx context.Context)) {
	w.wg.Go(func() { fn(w.bg) })
}

// Stop stops everything Start and Go started, the testbed last.
func (w *World) Stop() error {
	w.cancel()
	w.wg.Wait()
	return w.Testbed.Stop()
}

// Client is cluster's client.
func (w *World) Client(cluster string) client.Client { return w.Testbed.Cluster(cluster).Client }

// Context is the world's context: cancelled by Stop, so that a step still
// waiting when the world stops (the demo interrupted) ends.
func (w *World) Context() context.Context { return w.bg }

// Clusters are the world's clusters, as Options named them.
func (w *World) Clusters() []string { return slices.Clone(w.clusters) }

// git runs the real git in the fleet work tree and returns its output.
func (w *World) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", w.Dir}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// ArgoCD says cluster is on Argo CD (and the testbed runs Argo CD, not
// Flux, for it).
func (w *World) ArgoCD(cluster string) bool { return w.argo[cluster] }

// fleetFacts is what Start needs to know of the story's fleet file before
// the world runs: whether it names gpufleet-controller's version (so that
// render installs it), and which clusters it puts on Argo CD. A file that
// is no fleet yet (one `gpufleet init` is to write) says neither.
func fleetFacts(src []byte) (controller bool, argo []string) {
	f, err := fleet.Parse("fleet.toml", src)
	if err != nil {
		return false, nil
	}
	for _, r := range f.Releases {
		if r.Controller != "" {
			controller = true
		}
	}
	return controller, f.ArgoCDClusters()
}
