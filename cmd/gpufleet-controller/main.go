// Command gpufleet-controller runs the lifecycle controller: it rolls each
// DriverRollout's GPU driver version across a cluster's nodes. The logic is
// in internal/controller; this file only wires flags to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	// Maintenance windows name IANA time zones (planner/windows.go loads
	// them on every pass): the controller carries the zone database, as
	// its image (distroless, scratch) may have none.
	_ "time/tzdata"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/controller"
)

// Exit codes: 2 for a bad command line, 1 for anything else.
const (
	exitFailed = 1
	exitUsage  = 2
)

// version is the release this binary is built as, set at link time by
// `make release` and the Dockerfile:
//
//	go build -ldflags "-X main.version=v1.2.0" ./cmd/gpufleet-controller
//
// Left empty, the controller reports the module version Go records in the
// binary, "(devel)" for a build from a working tree.
var version string

func main() {
	os.Exit(run(os.Args[1:], os.Stderr, ctrl.SetupSignalHandler))
}

// buildVersion is version, or what Go recorded of the module.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// run parses args and runs the controller until signals' context ends. It
// returns the exit code.
func run(args []string, stderr io.Writer, signals func() context.Context) int {
	fs := flag.NewFlagSet(controller.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o controller.Options
	var kubeconfig string
	var showVersion bool
	fs.BoolVar(&showVersion, "version", false, "print the controller's version and exit")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the /metrics endpoint; "0" turns it off`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader so only one replica acts at a time")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election lease (default: the pod's own)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 0, "how long a replica waits before taking over from a leader that stopped renewing (default 15s)")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 0, "how long the leader retries renewing before it stops acting (default 10s)")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 0, "how often replicas try to take or renew the lease (default 2s)")
	fs.StringVar(&o.DriverPodSelector, "driver-pod-selector", controller.DefaultDriverPodSelector, "label selector of the GPU Operator's driver pods")
	fs.DurationVar(&o.DrainRetry, "drain-retry", 0, "how soon a drain that still has pods (one a PodDisruptionBudget protects, say) is retried; also the most often a draining node's pods are listed (default 5s)")
	fs.DurationVar(&o.HealthPoll, "health-poll", 0, "how often a soaking node's Prometheus query runs (default 30s)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	var qps float64
	var burst int
	fs.Float64Var(&qps, "kube-api-qps", defaultQPS, "steady requests per second to the API server, however the kubeconfig is given")
	fs.IntVar(&burst, "kube-api-burst", defaultBurst, "requests allowed in a burst above --kube-api-qps")
	zo := zap.Options{}
	zo.BindFlags(fs)
	fs.Usage = func() { usage(fs, stderr) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if showVersion {
		fmt.Fprintf(stderr, "%s %s\n", controller.Name, buildVersion())
		return 0
	}
	if qps <= 0 || burst < 1 {
		fmt.Fprintf(stderr, "%s: --kube-api-qps must be above 0 and --kube-api-burst at least 1\n", controller.Name)
		return exitUsage
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", controller.Name, err)
		return exitUsage
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("setup")
	log.Info("starting", "version", buildVersion())
	o.Version = buildVersion()

	cfg, err := restConfig(kubeconfig, float32(qps), burst)
	if err != nil {
		log.Error(err, "no cluster to talk to")
		return exitFailed
	}
	ctx := signals()
	if err := controller.Run(ctx, cfg, o); err != nil {
		log.Error(err, "controller stopped")
		return exitFailed
	}
	return 0
}

// The client's rate limits. client-go's own (5 QPS, burst 10) apply to a
// config built from a kubeconfig file, while controller-runtime's
// GetConfig raises them (20/30): the same controller ran at half speed on
// 100 nodes depending on how its kubeconfig was named. One setting for both.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

// restConfig finds the cluster: the --kubeconfig file, else $KUBECONFIG,
// else in-cluster; with the given client rate limits whichever it was.
func restConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}

// usage is -h: what the controller does, with each actuator, then the flags.
func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, `Usage: %s [flags]

Rolls each DriverRollout's GPU driver across the cluster's nodes: canary first
and alone, then, once spec.approval names the rollout, the other nodes within
parallelNodes and maxUnavailable, inside maintenance windows and outside
freezes, stopping when the failure budget is spent; every node soaks on the new
driver, watched for XID/ECC signals. spec.actuator says who moves the nodes:

  gpufleet      this controller cordons, drains, flips the node's
                gpufleet.io/driver label to the new driver's NVIDIADriver, and
                rolls a failed node back by itself (quarantining it when the
                rollback fails too).
  gpu-operator  the GPU Operator's own upgrade controller moves them (render
                turns its upgrade policy on and changes the pool's one
                NVIDIADriver in place); this controller holds every selected
                node with the operator's %s=true label and
                releases them one by one under the same policy. What it cannot do:
`, fs.Name(), v1alpha1.LabelOperatorUpgradeSkip)
	for _, l := range v1alpha1.OperatorActuatorLimits {
		fmt.Fprintf(w, "                  - %s\n", l)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.PrintDefaults()
}
