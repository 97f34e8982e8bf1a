package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/controller"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/nodesim"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// The demo fleet (fleet.toml).
const (
	stg  = "stg"
	prod = "prod"

	// waveProduction is the wave prod is in (a wave may not share a
	// cluster's name: approvals name either).
	waveProduction = "production"

	relGood  = "r2026-10"
	relDrill = "r2026-10-drill"

	drvStable = "570.172.08"
	drvGood   = "580.95.05"
	drvDrill  = "580.82.07"

	chartVersion = "v25.3.4"
	product      = "NVIDIA-H100-80GB-HBM3"
	poolName     = "h100"
	poolNodes    = 3

	placeholderCharts = `"../shared/operators"`
)

var clusterNames = []string{stg, prod}

// world is the running demo: the testbed, the helpers beside it and the
// fleet repository's work tree.
type world struct {
	tb        *testbed.Testbed
	dir       string
	fleetFile string
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// start starts the testbed (with the controller-manager, scheduler and
// kwok), per cluster a node agent, the real GPU Operator once Flux has
// applied its chart, and a lifecycle controller, and the fleet repository.
// On error everything started is stopped.
func start(ctx context.Context, o Options) (w *world, err error) {
	operators, err := filepath.Abs(filepath.Join(o.Root, "..", "shared", "operators"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(operators, "gpu-operator", chartVersion)); err != nil {
		return nil, fmt.Errorf("the demo needs the real GPU Operator charts in ../shared/operators beside the repository: %w", err)
	}
	bins, err := testbed.FindBinaries()
	if err != nil {
		return nil, err
	}
	if err := bins.CheckGPUOperator(); err != nil {
		return nil, err
	}
	// Flux applies the operator's CRDs (the manifests mode renders them);
	// the DriverRollout CRD is the controller's to install.
	tb, err := testbed.Start(ctx, testbed.Options{
		Clusters: clusterNames, CRDDirs: []string{filepath.Join(o.Root, "config", "crd", "bases")},
		Flux: true, Git: true, Kube: true, Kwok: true, Scheme: gatetest.Scheme(),
		Dir: o.Dir, StartTimeout: 3 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	w = &world{tb: tb, cancel: cancel}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.stop())
		}
	}()

	for _, name := range clusterNames {
		c := tb.Cluster(name)
		sim := nodesim.New(c.Client, nodesim.Options{Kwok: true, BadDrivers: []string{drvDrill}, InstallTime: time.Second})
		if _, err := sim.AddPool(ctx, nodesim.Pool{Name: poolName, Product: product, Nodes: poolNodes, Driver: drvStable}); err != nil {
			return w, fmt.Errorf("cluster %s: node agent: %w", name, err)
		}
		w.wg.Go(func() { _ = sim.Run(bg) })
		w.wg.Go(func() { PlayNotificationController(bg, c.Client) })
		w.wg.Go(func() { _, _ = c.StartGPUOperatorWhenApplied(bg, testbed.GPUOperatorOptions{}) })
		mgr, err := controller.NewManager(bg, c.Config, controller.Options{
			MetricsAddr: "0", ProbeAddr: "0", DrainRetry: 300 * time.Millisecond, HealthPoll: time.Second,
			SkipNameValidation: true,
		})
		if err != nil {
			return w, fmt.Errorf("cluster %s: controller: %w", name, err)
		}
		w.wg.Go(func() { _ = mgr.Start(bg) })
	}

	w.dir = filepath.Join(tb.Dir, "fleet")
	repo, err := tb.Git.NewRepo("fleet.git", "main", w.dir)
	if err != nil {
		return w, err
	}
	src := bytes.Replace(fleetTOML, []byte(placeholderCharts), []byte(strconv.Quote(operators)), 1)
	w.fleetFile = filepath.Join(w.dir, "fleet.toml")
	if err := os.WriteFile(w.fleetFile, src, 0o644); err != nil {
		return w, err
	}
	for _, kv := range [][2]string{{"user.name", "gpufleet demo"}, {"user.email", "demo@gpufleet.invalid"}, {"commit.gpgsign", "false"}} {
		if _, err := w.git("config", kv[0], kv[1]); err != nil {
			return w, err
		}
	}
	for _, name := range clusterNames {
		c := tb.Cluster(name)
		if err := c.ApplySync(ctx, testbed.Sync{Name: "flux-system", URL: repo.URL, Path: "./clusters/" + name, Interval: 2 * time.Second}); err != nil {
			return w, err
		}
	}
	return w, nil
}

// stop stops everything start started, the testbed last.
func (w *world) stop() error {
	w.cancel()
	w.wg.Wait()
	return w.tb.Stop()
}

// git runs the real git in the fleet work tree.
func (w *world) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", w.dir}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// push pushes HEAD and returns the revision Flux will report.
func (w *world) push() (string, error) {
	if _, err := w.git("push", "-q", "origin", "HEAD:main"); err != nil {
		return "", err
	}
	sha, err := w.git("rev-parse", "HEAD")
	return "main@sha1:" + sha, err
}

// waitApplied waits until cluster's steps are Ready at revision.
func (w *world) waitApplied(ctx context.Context, cluster, revision string, steps ...string) error {
	if len(steps) == 0 {
		steps = []string{"operators", "config", "lifecycle"}
	}
	for _, s := range steps {
		if err := w.tb.Cluster(cluster).WaitApplied(ctx, s, revision, 3*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// waitRollout waits for the DriverRollout's phase.
func (w *world) waitRollout(ctx context.Context, cluster, name string, phase v1alpha1.RolloutPhase) (*v1alpha1.DriverRollout, error) {
	dr := &v1alpha1.DriverRollout{}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := w.tb.Cluster(cluster).Client.Get(ctx, client.ObjectKey{Name: name}, dr); err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("phase %s, %s", dr.Status.Phase, dr.Status.Progress)
		return dr.Status.Phase == phase && dr.Status.ObservedGeneration == dr.Generation, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: DriverRollout %s did not reach %s: %w (last: %s)", cluster, name, phase, err, last)
	}
	return dr, nil
}

// drivers returns "node=driver" for every GPU node of cluster.
func (w *world) drivers(ctx context.Context, cluster string) (map[string]string, error) {
	var nodes corev1.NodeList
	if err := w.tb.Cluster(cluster).Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		if n.Labels[nodesim.LabelGPUPresent] == "true" {
			out[n.Name] = n.Labels[nodesim.LabelDriverFull]
		}
	}
	return out, nil
}

// waitDrivers waits until every GPU node of cluster reports version.
func (w *world) waitDrivers(ctx context.Context, cluster, version string) error {
	var last map[string]string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := w.drivers(ctx, cluster)
		if err != nil {
			return false, nil
		}
		last = got
		for _, v := range got {
			if v != version {
				return false, nil
			}
		}
		return len(got) == poolNodes, nil
	})
	if err != nil {
		return fmt.Errorf("%s: nodes not all on %s: %w (last: %v)", cluster, version, err, last)
	}
	return nil
}
