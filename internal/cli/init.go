package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/adopt"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
)

type initOptions struct {
	fleetFile, kubeconfig, output       string
	contexts, environments, waves       []string
	values                              []string
	release, chartRepository, chartMode string
	force, dryRun                       bool
	timeout                             time.Duration
	concurrency                         int
}

func newInitCommand(s Streams) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init [--kubeconfig K] [--context C ...] [-f fleet.toml] [--force] [--dry-run] [--release NAME] [--environment CTX=ENV ...] [--wave NAME=CTX,CTX ...] [--values CTX/CHART=FILE ...] [-o text|json|yaml]",
		Short: "Write the fleet file of a GPU fleet that already runs, read from its live clusters",
		Long: `init reads the live clusters — every context of the kubeconfig, or those named
with --context — and writes the fleet file that describes what they run, so that
rendering it and letting Flux apply it changes nothing that runs. It writes
nothing to any cluster.

Per cluster (one per context, named after it):
  pools       the GPU nodes (nvidia.com/gpu.present=true, or a GPU product label)
              grouped by GPU product and MIG layout (nvidia.com/gpu.product
              without its -MIG-… or -SHARED suffix; nvidia.com/mig.config,
              all-disabled or absent meaning no MIG), with their node counts.
              A node labelled gpufleet.io/pool keeps that pool's name; other
              pools are named after the GPU (h100, with MIG h100-mig, more of
              the product where two pools would share a name)
  operators   the GPU Operator's Deployment, found in any namespace by its
              chart's labels: its Helm release and namespace (written as
              [clusters.<name>.gpu-operator], so render adopts that release
              rather than install a second one), its chart version, and how
              its driver is managed (ClusterPolicy or NVIDIADriver objects,
              from the ClusterPolicy); the Network Operator likewise, when
              one runs. A cluster whose ClusterPolicy manages the driver gets
              [policy.clusters.<name>] actuator = "gpu-operator".
  values      each operator release's own values, read from Helm's record of
              its deployed revision (the Secret sh.helm.release.v1.<release>.v<N>
              in its namespace, or a ConfigMap of Helm's older storage): what
              helm get values prints, less the keys gpufleet sets from the
              fleet file (driver.version, driver.upgradePolicy, mig.strategy…),
              written as the table's values so that render keeps them. init
              needs to list Secrets in the releases' namespaces for it; where
              it may not, --values CONTEXT/CHART=FILE gives them by hand (the
              YAML helm get values -o yaml prints).

One release of what runs becomes [promotion] stable: the GPU Operator and
Network Operator chart versions and the driver GPU Feature Discovery reports
(nvidia.com/cuda.driver-version.full; its branch where the operator installs
precompiled drivers). It is named by --release, by default after those
versions: gpuop-v25-3-4-netop-v25-4-0-drv-570-172-08.

Environments: --environment CTX=ENV, else "staging" for a context whose name
has the word staging, stage, stg, dev, test or qa, else "prod". Waves:
--wave NAME=CTX,CTX in order (every context in exactly one), else one wave per
environment, staging first and prod last. Every wave but the first is entered
only once approved, and a wave of two or more clusters starts with its first
cluster alone (its canary) and pauses after it. The policy is conservative:
one canary node a person approves, one node at a time, at most one node
unavailable, the first failed node stops the rollout.

init refuses to guess. It writes nothing, exits 1 and names the nodes and
what to do, all problems at once, when: a pool's nodes run different drivers;
a GPU node has no product label (its driver is not loaded); a node has a
host-installed driver (nvidia.com/gpu.deploy.driver=pre-installed); a node is
in the middle of an operator upgrade (nvidia.com/gpu-driver-upgrade-state
other than upgrade-done); the clusters run different GPU Operator, Network
Operator or driver versions (one fleet file has one stable release: init the
clusters apart, with --context and -f); no GPU Operator is found; an
operator release's values cannot be read; the release's driver.version is
not the driver its nodes run.

The file is written atomically; an existing one is left alone unless
--force. --dry-run prints it on standard output and writes nothing. -o json
or yaml prints a report of what was read per cluster and the problems
instead of the summary.

Exit codes: 0 written (or printed); 1 refused (a problem above, or the file
exists); 2 wrong command line; 3 a cluster could not be read (unreachable,
context missing, timeout): nothing is written unless every cluster was read.`,
		Example: `  # every context of the kubeconfig, into fleet.toml
  gpufleet init

  # two clusters; look at the file first
  gpufleet init --context stg-h100 --context prod-h100-a --dry-run

  # name the release, an environment and the waves
  gpufleet init --release r2026-06 --environment gpu-eu-1=prod \
    --wave canary=gpu-eu-1 --wave rest=gpu-us-1,gpu-us-2

  # what init reads, for a script
  gpufleet init --dry-run -o json

  # a cluster whose Helm records init may not read: its release's values by hand
  helm --kube-context prod-1 get values gpu-operator -n gpu-operator -o yaml > prod-1.yaml
  gpufleet init --values prod-1/gpu-operator=prod-1.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file to write")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	f.StringArrayVar(&o.contexts, "context", nil, "read this kubeconfig context (repeatable; default: every context)")
	f.BoolVar(&o.force, "force", false, "overwrite the fleet file if it exists")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the fleet file on standard output; write nothing")
	f.StringVar(&o.release, "release", "", "the release's name (default: named after the versions that run)")
	f.StringArrayVar(&o.environments, "environment", nil, "CONTEXT=ENV: the environment of a cluster (repeatable)")
	f.StringArrayVar(&o.waves, "wave", nil, "NAME=CTX,CTX: a wave and its clusters in order (repeatable, in wave order)")
	f.StringArrayVar(&o.values, "values", nil, "CONTEXT/CHART=FILE: the values of an operator's Helm release (CHART gpu-operator or network-operator), as helm get values -o yaml prints them, instead of reading its record (repeatable)")
	f.StringVar(&o.chartRepository, "chart-repository", "", "[charts] repository: a Helm repository URL or oci:// reference (default: NVIDIA's)")
	f.StringVar(&o.chartMode, "chart-mode", "helmrelease", "[charts] mode: helmrelease or manifests")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "time allowed per cluster")
	f.IntVar(&o.concurrency, "concurrency", 8, "the most clusters read at once")
	f.StringVarP(&o.output, "output", "o", formatText, "text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		// The contexts of the kubeconfig --kubeconfig names (parsed by
		// then), or of the standard one.
		kc, err := adopt.LoadKubeconfig(o.kubeconfig)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return kc.Contexts(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func (o *initOptions) validate() error {
	if err := checkFormat(o.output, formatText, formatJSON, formatYAML); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if o.concurrency <= 0 {
		return errors.New("--concurrency must be at least 1")
	}
	switch o.chartMode {
	case "helmrelease", "manifests":
	default:
		return fmt.Errorf("--chart-mode must be helmrelease or manifests, got %q", o.chartMode)
	}
	if _, err := o.adoptOptions(); err != nil {
		return err
	}
	return nil
}

// adoptOptions parses the flags that shape the fleet file.
func (o *initOptions) adoptOptions() (adopt.Options, error) {
	a := adopt.Options{Release: o.release, ChartRepository: o.chartRepository, ChartMode: o.chartMode, Environments: map[string]string{}}
	for _, e := range o.environments {
		i := strings.LastIndex(e, "=")
		if i <= 0 || i == len(e)-1 {
			return a, fmt.Errorf("--environment %q: write CONTEXT=ENVIRONMENT", e)
		}
		ctx, env := e[:i], e[i+1:]
		if prev, dup := a.Environments[ctx]; dup && prev != env {
			return a, fmt.Errorf("--environment gives context %q two environments: %s and %s", ctx, prev, env)
		}
		a.Environments[ctx] = env
	}
	for _, w := range o.waves {
		name, list, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return a, fmt.Errorf("--wave %q: write NAME=CONTEXT,CONTEXT", w)
		}
		spec := adopt.WaveSpec{Name: name}
		for ctx := range strings.SplitSeq(list, ",") {
			if ctx = strings.TrimSpace(ctx); ctx != "" {
				spec.Contexts = append(spec.Contexts, ctx)
			}
		}
		a.Waves = append(a.Waves, spec)
	}
	for _, v := range o.values {
		key, file, ok := strings.Cut(v, "=")
		// A context's name may hold a "/" (an EKS ARN); a chart's not.
		i := strings.LastIndex(key, "/")
		if !ok || i <= 0 || file == "" {
			return a, fmt.Errorf("--values %q: write CONTEXT/CHART=FILE", v)
		}
		ctx, chart := key[:i], key[i+1:]
		if ctx == "" {
			return a, fmt.Errorf("--values %q: write CONTEXT/CHART=FILE", v)
		}
		if chart != adopt.ChartGPUOperator && chart != adopt.ChartNetworkOperator {
			return a, fmt.Errorf("--values %q: the chart is %s or %s, not %q", v, adopt.ChartGPUOperator, adopt.ChartNetworkOperator, chart)
		}
		if _, dup := a.Values[key]; dup {
			return a, fmt.Errorf("--values gives %s twice", key)
		}
		values, err := readValuesFile(file)
		if err != nil {
			return a, fmt.Errorf("--values %s: %w", key, err)
		}
		if a.Values == nil {
			a.Values = map[string]map[string]any{}
		}
		a.Values[adopt.ValuesKey(ctx, chart)] = values
	}
	return a, nil
}

// readValuesFile reads a Helm values file as Helm reads one (YAML to JSON):
// a mapping, or nothing.
func readValuesFile(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s is not a Helm values file: %w", path, err)
	}
	if v == nil {
		v = map[string]any{}
	}
	return v, nil
}

func (o *initOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if !o.dryRun && !o.force {
		if _, err := os.Lstat(o.fleetFile); err == nil {
			return withCode(ExitFailed, fmt.Errorf("%s exists: init writes a new fleet file; --force overwrites it, -f names another, --dry-run prints it", o.fleetFile))
		}
	}
	kc, err := adopt.LoadKubeconfig(o.kubeconfig)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	contexts := o.contextsToRead(kc)
	if len(contexts) == 0 {
		return withCode(ExitUnknown, errors.New("the kubeconfig has no contexts: there is no cluster to read (--kubeconfig names another)"))
	}
	aopts, _ := o.adoptOptions()
	if err := adopt.CheckOptions(contexts, aopts); err != nil {
		return withCode(ExitUsage, err)
	}
	clusters, err := adopt.Read(ctx, adopt.ReadOptions{Kubeconfig: kc, Contexts: contexts, Timeout: o.timeout, Concurrency: o.concurrency})
	if err != nil {
		return withCode(ExitUnknown, fmt.Errorf("nothing written: %w", err))
	}
	r := adopt.Judge(clusters, aopts)
	var text []byte
	if r.Err() == nil {
		text = adopt.Write(r.Fleet)
		// init never writes a file the other commands would refuse: a
		// setup the fleet file cannot describe (a MIG layout the GPU does
		// not offer, by gpufleet's tables) is refused here, at once.
		if _, err := fleet.Parse(o.fleetFile, text); err != nil {
			return withCode(ExitFailed, fmt.Errorf("nothing written: the fleet file init made from what runs is refused by the fleet parser:\n%w", err))
		}
	}
	written := false
	if text != nil && !o.dryRun {
		if err := writeFleetFile(o.fleetFile, text, o.force); err != nil {
			return withCode(ExitFailed, fmt.Errorf("write %s: %w", o.fleetFile, err))
		}
		written = true
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, newInitReport(o.fleetFile, written, r)); err != nil {
			return err
		}
		if r.Err() != nil {
			return silentFailure{code: ExitFailed}
		}
		return nil
	}
	summary := out
	if o.dryRun {
		// Standard output is the fleet file alone, for a redirect.
		summary = errOut
		if text != nil {
			if _, err := out.Write(text); err != nil {
				return err
			}
		}
	}
	printInitSummary(summary, r)
	for _, w := range r.Warnings {
		fmt.Fprintf(errOut, "gpufleet: warning: %s\n", w)
	}
	if r.Err() != nil {
		return withCode(ExitFailed, fmt.Errorf("init refused, nothing written (%d %s):\n%s", len(r.Problems), noun(len(r.Problems), "problem", "problems"), indentProblems(r.Problems)))
	}
	if written {
		fmt.Fprintf(summary, "\nwrote %s. Next: gpufleet render, review what it writes, commit both, and let Flux apply them.\n", o.fleetFile)
	}
	return nil
}

// contextsToRead are the --context names (each once, in order given), or
// every context of the kubeconfig.
func (o *initOptions) contextsToRead(kc *adopt.Kubeconfig) []string {
	if len(o.contexts) == 0 {
		return kc.Contexts()
	}
	var out []string
	for _, c := range o.contexts {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func indentProblems(ps adopt.Problems) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = "  - " + p.String()
	}
	return strings.Join(lines, "\n")
}

// writeFleetFile writes the fleet file atomically. Without force it never
// replaces a file, even one created since init looked: the new file is
// linked into place, which fails if the name exists.
func writeFleetFile(path string, data []byte, force bool) error {
	if force {
		return fsutil.WriteFileAtomic(path, data)
	}
	err := fsutil.WriteNewFileAtomic(path, data)
	if errors.Is(err, fsutil.ErrExist) {
		return fmt.Errorf("%s appeared while init read the clusters; left alone (--force overwrites it)", path)
	}
	return err
}

// InitReport is what `gpufleet init -o json` prints: what was read per
// cluster, the release and waves the fleet file holds, and the problems
// that stopped it (each with its nodes), or the warnings beside it.
type InitReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// File is the fleet file; Written says it was written (not with
	// --dry-run, nor when refused).
	File     string                `json:"file"`
	Written  bool                  `json:"written"`
	Contexts []string              `json:"contexts"`
	Release  adopt.Release         `json:"release"`
	Clusters []*adopt.FleetCluster `json:"clusters"`
	Waves    []adopt.Wave          `json:"waves"`
	Problems adopt.Problems        `json:"problems"`
	Warnings adopt.Problems        `json:"warnings"`
}

func newInitReport(file string, written bool, r *adopt.Result) InitReport {
	rep := InitReport{APIVersion: cliAPIVersion, Kind: "InitReport", File: file, Written: written,
		Contexts: r.Fleet.Contexts, Release: r.Fleet.Release, Clusters: r.Fleet.Clusters, Waves: r.Fleet.Waves,
		Problems: r.Problems, Warnings: r.Warnings}
	if rep.Problems == nil {
		rep.Problems = adopt.Problems{}
	}
	if rep.Warnings == nil {
		rep.Warnings = adopt.Problems{}
	}
	for _, c := range rep.Clusters {
		if c.Pools == nil {
			c.Pools = []*adopt.Pool{}
		}
	}
	return rep
}

// printInitSummary prints what init read: a line per cluster, the release
// and the waves.
func printInitSummary(w io.Writer, r *adopt.Result) {
	f := r.Fleet
	fmt.Fprintf(w, "read %d %s: %s\n\n", len(f.Contexts), noun(len(f.Contexts), "cluster", "clusters"), strings.Join(f.Contexts, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tENVIRONMENT\tGPU NODES\tPOOLS\tGPU OPERATOR\tDRIVER MANAGEMENT\tNETWORK OPERATOR")
	for _, c := range f.Clusters {
		var pools []string
		for _, p := range c.Pools {
			pools = append(pools, fmt.Sprintf("%s (%d)", p.Name, len(p.Nodes)))
		}
		gpu, mgmt, network := "none", "-", "none"
		if op := c.GPUOperator; op != nil {
			gpu, mgmt = fmt.Sprintf("%s %s/%s", op.Version, op.Namespace, op.Release), op.DriverManagement
		}
		if op := c.NetworkOperator; op != nil {
			network = fmt.Sprintf("%s %s/%s", op.Version, op.Namespace, op.Release)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.Environment, c.GPUNodes, strings.Join(pools, ", "), gpu, mgmt, network)
	}
	tw.Flush()
	if rel := f.Release; rel.Name != "" {
		network := "no Network Operator"
		if rel.NetworkOperator != "" {
			network = "Network Operator " + rel.NetworkOperator
		}
		driver := "driver " + rel.Driver
		if rel.Precompiled {
			driver = "precompiled driver branch " + rel.Driver
		}
		fmt.Fprintf(w, "\nrelease %s (stable): GPU Operator %s, %s, %s\n", rel.Name, rel.GPUOperator, network, driver)
	}
	var waves []string
	for _, wv := range f.Waves {
		cs := slices.Clone(wv.Clusters)
		if wv.Canary != "" {
			for i, c := range cs {
				if c == wv.Canary {
					cs[i] += " (canary)"
				}
			}
		}
		s := wv.Name + " [" + strings.Join(cs, ", ") + "]"
		if wv.RequireApproval {
			s += " on approval"
		}
		waves = append(waves, s)
	}
	if len(waves) > 0 {
		fmt.Fprintf(w, "waves: %s\n", strings.Join(waves, " → "))
	}
}
