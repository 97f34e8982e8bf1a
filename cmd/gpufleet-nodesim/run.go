package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitUnknown = 3 // the cluster could not be reached
)

// options are the command line's settings.
type options struct {
	kubeconfig  string
	context     string
	pools       []nodesim.Pool
	badDrivers  []string
	installTime time.Duration
	resync      time.Duration
}

// poolFlag collects repeated --pool values.
type poolFlag struct{ pools *[]nodesim.Pool }

func (f poolFlag) String() string { return "" }

func (f poolFlag) Set(s string) error {
	p, err := nodesim.ParsePool(s)
	if err != nil {
		return err
	}
	*f.pools = append(*f.pools, p)
	return nil
}

// listFlag collects repeated string values.
type listFlag struct{ values *[]string }

func (f listFlag) String() string { return "" }

func (f listFlag) Set(s string) error {
	*f.values = append(*f.values, s)
	return nil
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("gpufleet-nodesim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (required)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context (default: the current one)")
	fs.Var(poolFlag{&o.pools}, "pool", "a pool of nodes: name=,product=,nodes=,driver=[,gpus=,memory=,family=,mig=,managed-nics=] (repeatable)")
	fs.Var(listFlag{&o.badDrivers}, "bad-driver", "a driver version whose install fails (repeatable)")
	fs.DurationVar(&o.installTime, "install-time", 3*time.Second, "how long a driver install takes")
	fs.DurationVar(&o.resync, "resync", 500*time.Millisecond, "how often the simulator looks at the cluster")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	if o.kubeconfig == "" {
		errs = append(errs, errors.New("--kubeconfig is required"))
	}
	if len(o.pools) == 0 {
		errs = append(errs, errors.New("at least one --pool is required"))
	}
	for _, v := range o.badDrivers {
		if err := nodesim.ValidateVersion(v); err != nil {
			errs = append(errs, fmt.Errorf("--bad-driver: %w", err))
		}
	}
	if o.installTime <= 0 || o.resync <= 0 {
		errs = append(errs, errors.New("--install-time and --resync must be positive"))
	}
	return errors.Join(errs...)
}

// run parses args and simulates until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpufleet-nodesim: %v\n", err)
		return exitUsage
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: o.context},
	).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "gpufleet-nodesim: load kubeconfig: %v\n", err)
		return exitUsage
	}
	// client-go's default of 5 requests a second is too few for a pass over
	// a demo fleet; the simulator only writes what changes.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintf(stderr, "gpufleet-nodesim: %v\n", err)
		return exitUnknown
	}
	sim := nodesim.New(c, nodesim.Options{
		InstallTime: o.installTime,
		Resync:      o.resync,
		BadDrivers:  o.badDrivers,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stdout, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
		},
	})
	for _, p := range o.pools {
		nodes, err := sim.AddPool(ctx, p)
		if ctx.Err() != nil {
			return exitOK // interrupted while setting up: not a failure
		}
		if err != nil {
			fmt.Fprintf(stderr, "gpufleet-nodesim: %v\n", err)
			return exitUnknown
		}
		fmt.Fprintf(stdout, "pool %s: %s\n", p.Name, strings.Join(nodes, " "))
	}
	if err := sim.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "gpufleet-nodesim: %v\n", err)
		return exitFailed
	}
	return exitOK
}
