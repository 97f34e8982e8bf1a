package adopt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Options are what the fleet file takes from the command line rather than
// from the clusters.
type Options struct {
	// Release names the release; empty: ReleaseName of what runs.
	Release string
	// Environments give contexts their environment; a context not named
	// gets DefaultEnvironment.
	Environments map[string]string
	// Waves are the waves in order, each listing contexts; none:
	// DefaultWaves. CheckWaves says whether they fit the contexts.
	Waves []WaveSpec
	// ChartRepository is [charts] repository; empty: NVIDIA's.
	ChartRepository string
	// ChartMode is [charts] mode; empty: helmrelease.
	ChartMode string
	// Values are operators' release values given by hand, by ValuesKey
	// (context and chart), used instead of those read from the release's
	// record (for a cluster where init may not read it).
	Values map[string]map[string]any
}

// Result is what Judge found: the fleet file's model (as far as it could
// be built: with problems it is what was read, for the report), the
// problems that stop init from writing it, and warnings to print beside it.
type Result struct {
	Fleet    *Fleet
	Problems Problems
	Warnings Problems
}

// Err is the problems as one error, nil when there are none.
func (r *Result) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return r.Problems
}

// Judge turns what Read found into the fleet file's model, or into the
// problems that stop it. It is pure: the same clusters and options give the
// same result.
func Judge(clusters []Cluster, o Options) *Result {
	clusters = slices.Clone(clusters)
	slices.SortFunc(clusters, func(a, b Cluster) int { return strings.Compare(a.Context, b.Context) })
	r := &Result{Fleet: &Fleet{ChartRepository: o.ChartRepository, ChartMode: o.ChartMode}}
	if r.Fleet.ChartRepository == "" {
		r.Fleet.ChartRepository = fleet.DefaultChartRepository
	}
	if r.Fleet.ChartMode == "" {
		r.Fleet.ChartMode = fleet.ModeHelmRelease
	}
	precompiled := map[string]bool{}
	for _, c := range clusters {
		r.Fleet.Contexts = append(r.Fleet.Contexts, c.Context)
		fc, pre, probs, warns := judgeCluster(c, o.Values)
		fc.Environment = o.Environments[c.Context]
		if fc.Environment == "" {
			fc.Environment = DefaultEnvironment(c.Context)
		}
		precompiled[fc.Name] = pre
		r.Fleet.Clusters = append(r.Fleet.Clusters, fc)
		r.Problems = append(r.Problems, probs...)
		r.Warnings = append(r.Warnings, warns...)
	}
	rel, probs := judgeRelease(r.Fleet.Clusters, precompiled)
	r.Problems = append(r.Problems, probs...)
	rel.Name = o.Release
	if rel.Name == "" && len(probs) == 0 {
		rel.Name = ReleaseName(rel)
	}
	r.Fleet.Release = rel
	specs := o.Waves
	if len(specs) == 0 {
		specs = DefaultWaves(r.Fleet.Clusters)
	}
	r.Fleet.Waves = gatedWaves(specs)
	return r
}

// judgeCluster judges one cluster: its pools, its operators and their
// driver management, and whether its nodes run what a release can say.
// precompiled says the operator installs precompiled drivers, so the
// driver is a branch.
func judgeCluster(c Cluster, given map[string]map[string]any) (fc *FleetCluster, precompiled bool, probs, warns Problems) {
	name := c.Context
	fc = &FleetCluster{Name: name, Context: c.Context, GPUNodes: len(c.Nodes)}
	if !ValidName(name) {
		probs = append(probs, Problem{Cluster: name, Reason: ReasonClusterName,
			Message: fmt.Sprintf("context %q is not a valid cluster name (at most %d lower-case letters, digits and '-', starting and ending with a letter or digit), and init names each cluster after its context: rename it (kubectl config rename-context %s NEW-NAME) and run init again",
				name, maxName, shellQuote(name))})
	}

	gpu, opProbs := operatorOf(name, ChartGPUOperator, c.Deployments)
	probs = append(probs, opProbs...)
	network, opProbs := operatorOf(name, ChartNetworkOperator, c.Deployments)
	probs = append(probs, opProbs...)
	fc.GPUOperator, fc.NetworkOperator = gpu, network
	// The keys gpufleet owns that each release's values set, by chart.
	owned := map[string]map[string]any{}
	for _, op := range []struct {
		chart string
		in    *Install
	}{{ChartGPUOperator, gpu}, {ChartNetworkOperator, network}} {
		v, isGiven := given[ValuesKey(name, op.chart)]
		switch {
		case op.in != nil:
			o, p := releaseValues(name, op.chart, op.in, c.Releases, v, isGiven)
			owned[op.chart] = o
			probs = append(probs, p...)
		case isGiven:
			probs = append(probs, Problem{Cluster: name, Reason: ReasonReleaseValues,
				Message: fmt.Sprintf("values given for the %s (--values %s), which this cluster does not run: leave them out", op.chart, ValuesKey(name, op.chart))})
		}
	}
	var policy *ClusterPolicy
	if gpu != nil {
		var cpProbs Problems
		policy, cpProbs = clusterPolicyOf(name, c.ClusterPolicies)
		probs = append(probs, cpProbs...)
	}
	if policy != nil {
		gpu.ClusterPolicy = policy.Name
		gpu.DriverManagement = DriverManagementClusterPolicy
		if policy.UseNVIDIADriverCRD {
			gpu.DriverManagement = DriverManagementNVIDIADriver
		}
		precompiled = policy.UsePrecompiled && !policy.UseNVIDIADriverCRD
	}

	nodes, nodeProbs := judgeNodes(name, c.Nodes, precompiled)
	probs = append(probs, nodeProbs...)
	if len(c.Nodes) == 0 {
		probs = append(probs, Problem{Cluster: name, Reason: ReasonNoGPUNodes,
			Message: fmt.Sprintf("no GPU nodes (none labelled %s=true or %s): a fleet cluster has at least one GPU pool; leave this cluster out (--context)", v1alpha1.LabelGPUPresent, v1alpha1.LabelGFDProduct)})
	}
	pools, poolProbs := formPools(name, nodes)
	probs = append(probs, poolProbs...)
	fc.Pools = pools
	probs = append(probs, poolDrivers(name, pools, nodes)...)
	probs = append(probs, mixedAllocation(name, pools, nodes)...)
	labelProbs, labelWarns := productLabelsNeeded(name, policy != nil && policy.UseNVIDIADriverCRD, pools, nodes)
	probs, warns = append(probs, labelProbs...), append(warns, labelWarns...)
	if policy != nil && !policy.UseNVIDIADriverCRD {
		probs = append(probs, driverPending(name, policy, nodes)...)
		probs = append(probs, valuesDriverPending(name, gpu, owned[ChartGPUOperator], policy, nodes)...)
	}
	warns = append(warns, ownedValueWarnings(name, gpu, network, owned[ChartGPUOperator], owned[ChartNetworkOperator], pools)...)
	if policy != nil && policy.UseNVIDIADriverCRD && len(c.NVIDIADrivers) > 0 {
		// Render writes its own NVIDIADriver per pool and turns the
		// chart's default one off: the Helm upgrade (or Flux) would remove
		// these, and the operator would delete their DaemonSets with every
		// driver pod at once. gpufleet cannot take them over node by node
		// (yet), so it does not pretend to.
		probs = append(probs, Problem{Cluster: name, Reason: ReasonForeignNVIDIADrivers,
			Message: fmt.Sprintf("NVIDIADrivers that gpufleet did not write manage the drivers here: %s. render would replace them with its own per pool (selecting nodes by %s), and removing these deletes their DaemonSets with every driver pod at once; gpufleet does not adopt NVIDIADrivers it did not write: leave this cluster out (--context) until they are gone",
				strings.Join(c.NVIDIADrivers, ", "), v1alpha1.LabelDriver)})
	}
	if policy != nil && policy.UseNVIDIADriverCRD {
		// In ClusterPolicy mode one DaemonSet serves every pool: nothing
		// selects by pool until the cluster is switched.
		warns = append(warns, sharedProductWarnings(name, pools)...)
	}
	return fc, precompiled, probs, warns
}

// clusterPolicyOf picks the ClusterPolicy the operator serves (not
// status.state ignored) and checks it lets the operator install drivers.
func clusterPolicyOf(cluster string, cps []ClusterPolicy) (*ClusterPolicy, Problems) {
	var served []ClusterPolicy
	for _, cp := range cps {
		if cp.State != StateIgnored {
			served = append(served, cp)
		}
	}
	prob := func(format string, args ...any) Problems {
		return Problems{{Cluster: cluster, Reason: ReasonClusterPolicy, Message: fmt.Sprintf(format, args...)}}
	}
	switch {
	case len(served) == 0 && len(cps) == 0:
		return nil, prob("no ClusterPolicy: the GPU Operator runs nothing without one (its chart creates cluster-policy), so there is no driver management to adopt; create it (helm upgrade with the chart's defaults), then run init again")
	case len(served) == 0:
		return nil, prob("every ClusterPolicy (%s) is ignored by the operator: there is no driver management to adopt; see the operator's log", policyNames(cps))
	case len(served) > 1:
		return nil, prob("%d ClusterPolicies the operator may serve (%s): keep one, then run init again", len(served), policyNames(served))
	}
	cp := served[0]
	if cp.DriverEnabled != nil && !*cp.DriverEnabled {
		return nil, prob("ClusterPolicy %s has spec.driver.enabled=false: the operator installs no driver, so gpufleet could not move one; gpufleet manages drivers the GPU Operator installs", cp.Name)
	}
	return &cp, nil
}

func policyNames(cps []ClusterPolicy) string {
	names := make([]string, len(cps))
	for i, cp := range cps {
		names[i] = cp.Name
	}
	return strings.Join(names, ", ")
}

// judgeNodes sorts the GPU nodes into those init can place in a pool and
// problems: a node it cannot place (no product label: no driver loaded, so
// GPU Feature Discovery has not labelled it), a node whose host has its own
// driver or where the operator's driver is off, a node in the middle of an
// operator upgrade or of a MIG change. Every problem lists all its nodes.
// A node in an upgrade or MIG change is still placed, so the report shows
// its pool.
func judgeNodes(cluster string, nodes []Node, precompiled bool) ([]placedNode, Problems) {
	var (
		placed                           []placedNode
		unplaced, preinstalled, off, bad []string
		noDriver, draUnplaced            []string
		disagree, disagreeing            []string                // "node: what", and the nodes
		upgrading                        = map[string][]string{} // state → nodes
		migChanging                      = map[string][]string{} // state → nodes
	)
	for _, n := range nodes {
		l := n.Labels
		switch l[v1alpha1.LabelDeployDriver] {
		case DeployDriverPreinstalled:
			preinstalled = append(preinstalled, n.Name)
			continue
		case DeployDriverOff:
			off = append(off, n.Name)
			continue
		}
		if s := l[v1alpha1.LabelOperatorUpgradeState]; s != "" && s != v1alpha1.OperatorStateDone {
			upgrading[s] = append(upgrading[s], n.Name)
		}
		product := l[v1alpha1.LabelGFDProduct]
		fromSlices := product == "" && n.DRA != nil
		if fromSlices {
			// No GPU Feature Discovery here: the GPU DRA driver's slices
			// name the GPU, as NVML does, which GFD's label writes with
			// '-' for ' '.
			var ok bool
			if product, ok = n.DRA.Product(); !ok {
				draUnplaced = append(draUnplaced, n.Name)
				continue
			}
		}
		if product == "" {
			unplaced = append(unplaced, n.Name)
			continue
		}
		mig := l[v1alpha1.LabelMIGConfig]
		if mig == MIGDisabled {
			mig = ""
		}
		if s := l[v1alpha1.LabelMIGConfigState]; s != "" && s != MIGStateSuccess {
			migChanging[s] = append(migChanging[s], n.Name)
		}
		if mig != "" && !migLayout.MatchString(mig) {
			bad = append(bad, n.Name)
		}
		// The gate reads a node's driver by the same rule.
		reported := dra.DriverOf(l[v1alpha1.LabelGFDDriverFull], n.DRA)
		full, conflict := reported.Version, reported.Conflict
		if conflict != "" {
			disagree = append(disagree, n.Name+": "+conflict)
			disagreeing = append(disagreeing, n.Name)
		}
		driver := full
		if precompiled {
			driver = l[v1alpha1.LabelGFDDriverMajor]
			if driver == "" {
				driver, _, _ = strings.Cut(full, ".")
			}
		}
		if driver == "" && conflict == "" {
			noDriver = append(noDriver, n.Name)
		}
		placed = append(placed, placedNode{name: n.Name, key: gpuKey{Product: BaseProduct(product), MIG: mig}, pool: l[v1alpha1.LabelPool], driver: driver,
			dra: n.DRA != nil && n.DRA.Devices > 0, devicePlugin: n.DevicePluginGPUs > 0, productFromSlices: fromSlices})
	}
	var probs Problems
	add := func(reason Reason, nodes []string, format string, args ...any) {
		if len(nodes) == 0 {
			return
		}
		slices.Sort(nodes)
		probs = append(probs, Problem{Cluster: cluster, Reason: reason, Nodes: nodes, Message: fmt.Sprintf(format, args...)})
	}
	add(ReasonUnplaced, unplaced, "GPU %s %s %s no %s label: the driver is not loaded there, so GPU Feature Discovery could not say which GPU it is and init cannot place it in a pool; repair the node's driver (or cordon and remove the node), then run init again",
		nodeWord(len(unplaced)), nodeList(unplaced), hasHave(len(unplaced)), v1alpha1.LabelGFDProduct)
	add(ReasonUnplaced, draUnplaced, "GPU %s %s %s no %s label, and %s ResourceSlices of %s name no one GPU product (no productName, or several): init cannot place %s in a pool; see what they publish (kubectl get resourceslices --field-selector spec.driver=%s -o yaml), repair the DRA driver or label the %s with %s, then run init again",
		nodeWord(len(draUnplaced)), nodeList(draUnplaced), hasHave(len(draUnplaced)), v1alpha1.LabelGFDProduct, theirIts(len(draUnplaced)), v1alpha1.DRADriverGPU, themIt(len(draUnplaced)), v1alpha1.DRADriverGPU, nodeWord(len(draUnplaced)), v1alpha1.LabelGFDProduct)
	slices.Sort(disagree)
	add(ReasonDRADisagrees, disagreeing, "the reports of the driver a node runs disagree, so which one runs is not known: %s. A DRA kubelet plugin that ran on across a driver swap publishes the old driver until it restarts (delete its pod on the node), and GPU Feature Discovery relabels a node within a minute of a swap; once they agree, run init again",
		strings.Join(disagree, "; "))
	add(ReasonPreinstalledDriver, preinstalled, "%s %s %s a driver installed on the host (%s=%s): the GPU Operator does not manage it, so gpufleet could not move it; leave this cluster out (--context), or move the %s to the operator's driver, then run init again",
		nodeWord(len(preinstalled)), nodeList(preinstalled), hasHave(len(preinstalled)), v1alpha1.LabelDeployDriver, DeployDriverPreinstalled, nodeWord(len(preinstalled)))
	add(ReasonDriverOff, off, "%s %s %s the operator's driver turned off (%s=%s): no driver of the fleet's would reach %s; remove the label (or the %s from the cluster), then run init again",
		nodeWord(len(off)), nodeList(off), hasHave(len(off)), v1alpha1.LabelDeployDriver, DeployDriverOff, themIt(len(off)), nodeWord(len(off)))
	for _, s := range slices.Sorted(maps.Keys(upgrading)) {
		ns := upgrading[s]
		add(ReasonUpgrading, ns, "%s %s %s in the middle of a GPU Operator driver upgrade (%s=%s): what %s will run is not known yet; let the upgrade finish (or repair a failed one) until every node is %s, then run init again",
			nodeWord(len(ns)), nodeList(ns), isAre(len(ns)), v1alpha1.LabelOperatorUpgradeState, s, theyIt(len(ns)), v1alpha1.OperatorStateDone)
	}
	for _, s := range slices.Sorted(maps.Keys(migChanging)) {
		ns := migChanging[s]
		add(ReasonMIGChanging, ns, "the MIG layout of %s %s is not in place (%s=%s): let mig-manager finish (or repair it), then run init again",
			nodeWord(len(ns)), nodeList(ns), v1alpha1.LabelMIGConfigState, s)
	}
	add(ReasonMIGLayout, bad, "%s %s use%s a MIG layout (%s) the fleet file cannot name: it takes all-<profile> (all-1g.10gb) or all-balanced; move the %s to one of those, then run init again",
		nodeWord(len(bad)), nodeList(bad), sIfOne(len(bad)), v1alpha1.LabelMIGConfig, nodeWord(len(bad)))
	add(ReasonNoDriverVersion, noDriver, "GPU %s %s report%s no driver version (%s): GPU Feature Discovery has not labelled %s yet; wait for it (or repair it), then run init again",
		nodeWord(len(noDriver)), nodeList(noDriver), sIfOne(len(noDriver)), v1alpha1.LabelGFDDriverFull, themIt(len(noDriver)))
	return placed, probs
}

// mixedAllocation names the pools whose nodes hand their GPUs out in
// different ways: the device plugin (allocatable nvidia.com/gpu) on some,
// DRA (the GPU DRA driver's ResourceSlices) on others, or both on one
// node. A rollout drains the two kinds differently (a DRA node's claims
// and its kubelet plugin go in an order of their own), and no setting
// says yet how one pool of both should be rolled: init does not guess,
// and says how to split the pool by labels.
func mixedAllocation(cluster string, pools []*Pool, nodes []placedNode) Problems {
	byName := map[string]placedNode{}
	for _, n := range nodes {
		byName[n.name] = n
	}
	var probs Problems
	for _, p := range pools {
		var plugin, byDRA, both []string
		for _, name := range p.Nodes {
			switch n := byName[name]; {
			case n.dra && n.devicePlugin:
				both = append(both, name)
			case n.dra:
				byDRA = append(byDRA, name)
			case n.devicePlugin:
				plugin = append(plugin, name)
			}
		}
		if len(byDRA) > 0 && len(plugin) == 0 && len(both) == 0 {
			p.DRA = true
		}
		if len(both) == 0 && (len(plugin) == 0 || len(byDRA) == 0) {
			continue
		}
		var kinds, fixes []string
		if len(plugin) > 0 {
			kinds = append(kinds, fmt.Sprintf("nodes whose GPUs the device plugin offers (allocatable %s: %s)", v1alpha1.ResourceGPU, nodeList(plugin)))
		}
		if len(byDRA) > 0 {
			kinds = append(kinds, fmt.Sprintf("nodes whose GPUs DRA hands out (ResourceSlices of %s: %s)", v1alpha1.DRADriverGPU, nodeList(byDRA)))
		}
		if len(both) > 0 {
			kinds = append(kinds, fmt.Sprintf("nodes that offer their GPUs both ways (%s)", nodeList(both)))
			fixes = append(fixes, fmt.Sprintf("turn the device plugin or the DRA kubelet plugin off on %s, so that each node offers its GPUs one way", nodeList(both)))
		}
		if len(plugin) > 0 && len(byDRA) > 0 {
			fixes = append(fixes, fmt.Sprintf("split the pool by labels, each kind a pool of its own: kubectl --context %s label node --overwrite %s %s=%s; kubectl --context %s label node --overwrite %s %s=%s",
				shellQuote(cluster), strings.Join(plugin, " "), v1alpha1.LabelPool, p.Name, shellQuote(cluster), strings.Join(byDRA, " "), v1alpha1.LabelPool, fit(p.Name, "-dra")))
		}
		probs = append(probs, Problem{Cluster: cluster, Reason: ReasonMixedAllocation, Nodes: slices.Clone(p.Nodes),
			Message: fmt.Sprintf("pool %s mixes %s. A pool of both kinds is not supported yet: a rollout drains the two differently, and no policy says how to roll them together; until one does, %s; then run init again",
				p.Name, strings.Join(kinds, " with "), strings.Join(fixes, ", and "))})
	}
	return probs
}

// productLabelsNeeded speaks of the nodes placed by their DRA slices'
// productName, which carry no nvidia.com/gpu.product (GPU Feature
// Discovery does not run there). Everything that acts on a pool selects
// its nodes by that label: the DriverRollout, the gate, and in
// NVIDIADriver mode render's NVIDIADrivers. In ClusterPolicy mode the
// operator's one DaemonSet still gives them their driver, so the fleet
// file is written, with the commands that label them (until then they are
// not rolled and the gate finds them missing); in NVIDIADriver mode
// applying render's output would leave them without a driver, so init
// refuses until they are labelled.
func productLabelsNeeded(cluster string, nvidiaDriverMode bool, pools []*Pool, nodes []placedNode) (probs, warns Problems) {
	poolOf := map[string]string{}
	for _, p := range pools {
		for _, n := range p.Nodes {
			poolOf[n] = p.Name
		}
	}
	byProduct := map[string][]string{}
	for _, n := range nodes {
		if n.productFromSlices {
			byProduct[n.key.Product] = append(byProduct[n.key.Product], n.name)
		}
	}
	if len(byProduct) == 0 {
		return nil, nil
	}
	var all, found, cmds []string
	for _, product := range slices.Sorted(maps.Keys(byProduct)) {
		ns := byProduct[product]
		slices.Sort(ns)
		all = append(all, ns...)
		var in []string
		for _, n := range ns {
			if !slices.Contains(in, poolOf[n]) {
				in = append(in, poolOf[n])
			}
		}
		found = append(found, fmt.Sprintf("%s in pool %s", product, strings.Join(in, ", ")))
		cmds = append(cmds, fmt.Sprintf("kubectl --context %s label node %s %s=%s", shellQuote(cluster), strings.Join(ns, " "), v1alpha1.LabelGFDProduct, product))
	}
	slices.Sort(all)
	what := fmt.Sprintf("%s %s %s no %s (GPU Feature Discovery does not run there): init placed %s by %s ResourceSlices of %s (%s)",
		nodeWord(len(all)), nodeList(all), hasHave(len(all)), v1alpha1.LabelGFDProduct, themIt(len(all)), theirIts(len(all)), v1alpha1.DRADriverGPU, strings.Join(found, "; "))
	if nvidiaDriverMode {
		return Problems{{Cluster: cluster, Reason: ReasonProductLabelNeeded, Nodes: all,
			Message: fmt.Sprintf("%s. render's NVIDIADrivers select a pool's nodes by that label, so applying its output would leave %s without a driver: label %s (%s), then run init again",
				what, themIt(len(all)), themIt(len(all)), strings.Join(cmds, "; "))}}, nil
	}
	return nil, Problems{{Cluster: cluster, Reason: ReasonProductLabelNeeded, Nodes: all,
		Message: fmt.Sprintf("%s. The DriverRollout and the gate select a pool's nodes by that label: until %s %s it, %s %s not rolled and the gate finds %s missing; label %s: %s",
			what, theyIt(len(all)), carries(len(all)), theyIt(len(all)), isAre(len(all)), themIt(len(all)), themIt(len(all)), strings.Join(cmds, "; "))}}
}

// poolDrivers sets each pool's driver, or names the nodes of a pool that
// runs more than one: a pool is one NVIDIADriver (one DaemonSet), and
// which of its drivers is the pool's is what init will not guess.
func poolDrivers(cluster string, pools []*Pool, nodes []placedNode) Problems {
	driverOf := map[string]string{}
	for _, n := range nodes {
		driverOf[n.name] = n.driver
	}
	var probs Problems
	for _, p := range pools {
		byDriver := map[string][]string{}
		for _, n := range p.Nodes {
			if d := driverOf[n]; d != "" {
				byDriver[d] = append(byDriver[d], n)
			}
		}
		switch len(byDriver) {
		case 0:
		case 1:
			for d := range byDriver {
				p.Driver = d
			}
		default:
			var parts []string
			for _, d := range slices.Sorted(maps.Keys(byDriver)) {
				parts = append(parts, fmt.Sprintf("%s on %s", d, nodeList(byDriver[d])))
			}
			probs = append(probs, Problem{Cluster: cluster, Reason: ReasonMixedDrivers, Nodes: slices.Clone(p.Nodes),
				Message: fmt.Sprintf("the nodes of pool %s run different drivers: %s; a pool runs one driver: finish (or undo) the upgrade that left them so, until every node runs one driver, then run init again",
					p.Name, strings.Join(parts, "; "))})
		}
	}
	return probs
}

// driverPending names the nodes that do not run the driver the
// ClusterPolicy asks for: its DaemonSet replaces a driver pod only when it
// is deleted (OnDelete), so an upgrade that was started and not finished
// leaves nodes on the old driver. Which of the two is the cluster's is not
// for init to guess. A version init cannot compare (a digest, empty) is
// left alone.
func driverPending(cluster string, cp *ClusterPolicy, nodes []placedNode) Problems {
	want := cp.DriverVersion
	behind, running := nodesNotOn(want, cp.UsePrecompiled, nodes)
	if len(behind) == 0 {
		return nil
	}
	return Problems{{Cluster: cluster, Reason: ReasonDriverPending, Nodes: behind,
		Message: fmt.Sprintf("ClusterPolicy %s asks for driver %s, but %s %s run%s %s: an upgrade was started and not finished; finish it (the operator's upgrade controller, or delete the old driver pods node by node), or set the ClusterPolicy's spec.driver.version back, then run init again",
			cp.Name, want, nodeWord(len(behind)), nodeList(behind), sIfOne(len(behind)), strings.Join(running, ", "))}}
}

// nodesNotOn names the placed nodes whose driver is not want, sorted, and
// the drivers they run; none when want is not a version (a branch, for
// precompiled drivers) that can be compared: a digest, empty.
func nodesNotOn(want string, precompiled bool, nodes []placedNode) (behind, running []string) {
	if precompiled {
		if !driverBranch.MatchString(want) {
			return nil, nil
		}
	} else if !driverVersion.MatchString(want) {
		return nil, nil
	}
	drivers := map[string]bool{}
	for _, n := range nodes {
		if n.driver != "" && n.driver != want {
			behind = append(behind, n.name)
			drivers[n.driver] = true
		}
	}
	slices.Sort(behind)
	return behind, slices.Sorted(maps.Keys(drivers))
}

// sharedProductWarnings: pools of one GPU product (MIG and not) are told
// apart by render's NVIDIADrivers through gpufleet.io/pool, which nodes
// whose pool init derived do not carry yet.
func sharedProductWarnings(cluster string, pools []*Pool) Problems {
	byProduct := map[string][]*Pool{}
	for _, p := range pools {
		byProduct[p.Product] = append(byProduct[p.Product], p)
	}
	var warns Problems
	for _, product := range slices.Sorted(maps.Keys(byProduct)) {
		ps := byProduct[product]
		if len(ps) < 2 {
			continue
		}
		var cmds, names, nodes []string
		for _, p := range ps {
			names = append(names, p.Name)
			if p.Labelled {
				continue
			}
			nodes = append(nodes, p.Nodes...)
			cmds = append(cmds, fmt.Sprintf("kubectl --context %s label node %s %s=%s", shellQuote(cluster), strings.Join(p.Nodes, " "), v1alpha1.LabelPool, p.Name))
		}
		if len(cmds) == 0 {
			continue
		}
		slices.Sort(nodes)
		warns = append(warns, Problem{Cluster: cluster, Reason: ReasonPoolLabelsNeeded, Nodes: nodes,
			Message: fmt.Sprintf("pools %s share the GPU %s: render's NVIDIADrivers tell them apart by %s, which their nodes do not carry yet; label them before Flux applies render's output: %s",
				strings.Join(names, ", "), product, v1alpha1.LabelPool, strings.Join(cmds, "; "))})
	}
	return warns
}

// judgeRelease finds the one release every cluster runs: one GPU Operator
// version, one Network Operator version (or none anywhere), one driver,
// precompiled everywhere or nowhere. Clusters that disagree are a problem
// each, saying which cluster runs what: one fleet file has one stable
// release, and which one is the fleet's is not init's to guess.
func judgeRelease(clusters []*FleetCluster, precompiled map[string]bool) (Release, Problems) {
	var rel Release
	var probs Problems
	skew := func(what string, by map[string][]string, advice string) {
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(by[v], ", ")))
		}
		probs = append(probs, Problem{Reason: ReasonVersionSkew,
			Message: fmt.Sprintf("the clusters run different %s: %s; one fleet file has one stable release: %s, or write one fleet file per version (gpufleet init --context … -f OTHER.toml)", what, strings.Join(parts, "; "), advice)})
	}
	gpuOp, netOp, drivers, pre := map[string][]string{}, map[string][]string{}, map[string][]string{}, map[string][]string{}
	for _, c := range clusters {
		if c.GPUOperator != nil && c.GPUOperator.Version != "" {
			gpuOp[c.GPUOperator.Version] = append(gpuOp[c.GPUOperator.Version], c.Name)
		}
		if c.GPUOperator != nil {
			netVersion := "no Network Operator"
			if c.NetworkOperator != nil {
				netVersion = c.NetworkOperator.Version
			}
			if netVersion != "" {
				netOp[netVersion] = append(netOp[netVersion], c.Name)
			}
		}
		for _, p := range c.Pools {
			if p.Driver != "" {
				key := c.Name + "/" + p.Name
				drivers[p.Driver] = append(drivers[p.Driver], key)
			}
		}
		if precompiled[c.Name] {
			pre["precompiled"] = append(pre["precompiled"], c.Name)
		} else {
			pre["built on each node"] = append(pre["built on each node"], c.Name)
		}
	}
	if len(gpuOp) > 1 {
		skew("GPU Operator versions", gpuOp, "upgrade (or roll back) the GPU Operator where it differs")
	}
	if len(netOp) > 1 {
		skew("Network Operator versions", netOp, "install or upgrade the Network Operator where it differs (a release either installs it everywhere or nowhere)")
	}
	if len(pre) > 1 {
		skew("kinds of driver", pre, "use the operator's precompiled drivers on every cluster or on none")
	} else if len(drivers) > 1 {
		skew("drivers", drivers, "roll the driver out where it differs")
	}
	for v := range gpuOp {
		rel.GPUOperator = v
	}
	for v := range netOp {
		if v != "no Network Operator" {
			rel.NetworkOperator = v
		}
	}
	for v := range drivers {
		rel.Driver = v
	}
	if len(gpuOp) > 1 || len(netOp) > 1 || len(drivers) > 1 {
		// Which one would be a guess: the report shows each cluster's.
		rel = Release{}
	}
	rel.Precompiled = len(pre) == 1 && len(pre["precompiled"]) > 0
	return rel, probs
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func sIfOne(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func carries(n int) string {
	if n == 1 {
		return "carries"
	}
	return "carry"
}

func theirIts(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

func themIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func theyIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "they"
}

// shellQuote quotes s for a shell command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_./:@=", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
