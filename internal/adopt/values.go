package adopt

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// The release's own values, carried into the fleet file.
//
// helm-controller upgrades a release with the HelmRelease's values alone,
// and the manifests mode renders the chart with render's alone: a value
// the team gave its release (a driver image mirror, the toolkit off) would
// be dropped by the first apply unless the fleet file carries it. So init
// writes the values of each operator's Helm release (as Helm records them,
// or as given with --values) into its table, less the keys gpufleet sets
// itself (fleet.GPUOperatorOwnedValues, fleet.NetworkOperatorOwnedValues),
// which render writes from the fleet file. Those are checked before they
// are dropped: a driver.version that is not what the nodes run is an
// upgrade started and not finished (DriverNotRolledOut, as for the
// ClusterPolicy), and a MIG strategy or Network Operator NFD that render
// sets otherwise is said as a warning.

// ValuesKey names the values of one operator of one context in
// Options.Values: "<context>/<chart>".
func ValuesKey(context, chart string) string { return context + "/" + chart }

// ValuesFromFlag is Install.ValuesFrom for values given by hand.
const ValuesFromFlag = "--values"

// releaseValues gives in, the install of chart on cluster, its release's
// own values: given (by hand, when isGiven) or read from its Helm release
// record among rels. The keys gpufleet owns are left out of in.Values and
// returned, by dotted path, for the checks. A release whose values cannot
// be had is a problem: writing the fleet file without them would change
// what runs.
func releaseValues(cluster, chart string, in *Install, rels []HelmRelease, given map[string]any, isGiven bool) (owned map[string]any, probs Problems) {
	values := given
	switch rel := findRelease(rels, in.Namespace, in.Release); {
	case isGiven:
		in.ValuesFrom = ValuesFromFlag
	case in.Release == "" || !validRelease(in.Release):
		// installOf names the problem.
		return nil, nil
	case rel == nil || rel.Err != "":
		why := "it was not read"
		if rel != nil {
			why = rel.Err
		}
		return nil, Problems{valuesProblem(cluster, chart, in, rel, why)}
	default:
		in.ValuesFrom = rel.Record
		values = rel.Values
	}
	list := fleet.NetworkOperatorOwnedValues
	if chart == ChartGPUOperator {
		list = fleet.GPUOperatorOwnedValues
	}
	in.Values, owned = splitOwned(values, list)
	in.ValuesDropped = slices.Sorted(maps.Keys(owned))
	return owned, nil
}

// valuesProblem says that the values of in's release could not be had,
// and what to do: grant init the read it lacks, or give them by hand.
func valuesProblem(cluster, chart string, in *Install, rel *HelmRelease, why string) Problem {
	file := cluster + "." + chart + ".yaml"
	byHand := fmt.Sprintf("pass them by hand: helm --kube-context %s get values %s -n %s -o yaml > %s; gpufleet init --values %s=%s",
		shellQuote(cluster), in.Release, in.Namespace, file, ValuesKey(cluster, chart), file)
	msg := fmt.Sprintf("cannot read the values of Helm release %s (the %s chart, namespace %s): %s. Without them render would install the release with gpufleet's values alone, dropping every value it was installed with",
		in.Release, chart, in.Namespace, why)
	if rel != nil && rel.Forbidden {
		msg += fmt.Sprintf(". Let init list the Secrets there (kubectl --context %s -n %s create role gpufleet-init-helm --verb=list --resource=secrets; kubectl --context %s -n %s create rolebinding gpufleet-init-helm --role=gpufleet-init-helm --user=<who runs init>), or %s",
			shellQuote(cluster), in.Namespace, shellQuote(cluster), in.Namespace, byHand)
	} else {
		msg += ". If Helm keeps the release elsewhere (its SQL storage), or it was not installed by Helm, " + byHand
	}
	return Problem{Cluster: cluster, Reason: ReasonReleaseValues, Message: msg + ", then run init again"}
}

func findRelease(rels []HelmRelease, namespace, name string) *HelmRelease {
	for i := range rels {
		if rels[i].Namespace == namespace && rels[i].Name == name {
			return &rels[i]
		}
	}
	return nil
}

// splitOwned splits values into the keys gpufleet does not own (a copy,
// nil when none is left) and those it does, by dotted path. A table above
// an owned key written as something else than a table (driver: null) is
// owned whole: render writes a table there.
func splitOwned(values map[string]any, owned []fleet.OwnedValue) (rest map[string]any, taken map[string]any) {
	rest = copyValues(values)
	for _, o := range owned {
		path := strings.Split(o.Path, ".")
		m := rest
		for i, seg := range path {
			v, ok := m[seg]
			if !ok {
				break
			}
			if i == len(path)-1 {
				if taken == nil {
					taken = map[string]any{}
				}
				taken[o.Path] = v
				delete(m, seg)
				break
			}
			next, isMap := v.(map[string]any)
			if !isMap {
				if taken == nil {
					taken = map[string]any{}
				}
				taken[strings.Join(path[:i+1], ".")] = v
				delete(m, seg)
				break
			}
			m = next
		}
	}
	pruneEmpty(rest, values)
	if len(rest) == 0 {
		return nil, taken
	}
	return rest, taken
}

// pruneEmpty removes the tables of m that dropping owned keys emptied
// (a table the release itself has empty stays).
func pruneEmpty(m, orig map[string]any) {
	for k, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		origSub, _ := orig[k].(map[string]any)
		pruneEmpty(sub, origSub)
		if len(sub) == 0 && len(origSub) > 0 {
			delete(m, k)
		}
	}
}

func copyValues(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out[k] = copyValues(sub)
			continue
		}
		out[k] = v
	}
	return out
}

// scalarString is a scalar value as text: a YAML 570 is a number.
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case float64, int, int64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

// valuesDriverPending names the nodes that do not run the driver the GPU
// Operator release's values ask for (driver.version), when the
// ClusterPolicy manages the driver and says otherwise (else
// driverPending already names them): the next Helm upgrade with those
// values would start an upgrade, so it is one started and not finished,
// and which driver is the cluster's is not for init to guess.
func valuesDriverPending(cluster string, in *Install, owned map[string]any, cp *ClusterPolicy, nodes []placedNode) Problems {
	v, ok := owned["driver.version"]
	if in == nil || !ok {
		return nil
	}
	want, isScalar := scalarString(v)
	if !isScalar || want == cp.DriverVersion {
		return nil
	}
	behind, running := nodesNotOn(want, cp.UsePrecompiled, nodes)
	if len(behind) == 0 {
		return nil
	}
	return Problems{{Cluster: cluster, Reason: ReasonDriverPending, Nodes: behind,
		Message: fmt.Sprintf("Helm release %s's values ask for driver %s (driver.version), but %s %s run%s %s (and ClusterPolicy %s asks for %s): the next upgrade of the release would move them, an upgrade started and not finished; set the release's driver.version to what runs (helm --kube-context %s upgrade %s -n %s --reuse-values --set driver.version=%s), or finish that upgrade, then run init again",
			in.Release, want, nodeWord(len(behind)), nodeList(behind), sIfOne(len(behind)), strings.Join(running, ", "), cp.Name, orNone(cp.DriverVersion),
			shellQuote(cluster), in.Release, in.Namespace, strings.Join(running, ","))}}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ownedValueWarnings say what render sets otherwise than the release's
// own values did, where it changes more than gpufleet's own settings: the
// MIG strategy (the names of the GPU resources) and the Network
// Operator's Node Feature Discovery (its pods).
func ownedValueWarnings(cluster string, gpu, network *Install, gpuOwned, networkOwned map[string]any, pools []*Pool) Problems {
	var warns Problems
	if gpu != nil {
		if v, ok := gpuOwned["mig.strategy"]; ok {
			got, _ := scalarString(v)
			mig := slices.ContainsFunc(pools, func(p *Pool) bool { return p.MIG != "" })
			want, why := "single", "no pool of the cluster uses MIG, so render leaves it to the chart's default"
			if mig {
				want, why = "mixed", "a pool of the cluster uses MIG, and render runs MIG with the mixed strategy"
			}
			if got != want {
				warns = append(warns, Problem{Cluster: cluster, Reason: ReasonOwnedValueReplaced,
					Message: fmt.Sprintf("Helm release %s sets mig.strategy=%s; render installs it with %s (%s): the operator restarts the device plugin with the new strategy, and with MIG the GPUs are then offered by profile (nvidia.com/mig-<profile>) rather than as nvidia.com/gpu. Move the release to %s before Flux applies render's output if workloads depend on it",
						gpu.Release, got, want, why, want)})
			}
		}
	}
	if network != nil {
		if v, ok := networkOwned["nfd.enabled"]; ok && v == true {
			warns = append(warns, Problem{Cluster: cluster, Reason: ReasonOwnedValueReplaced,
				Message: fmt.Sprintf("Helm release %s sets nfd.enabled=true; render turns the Network Operator's Node Feature Discovery off (the GPU Operator's runs, and two would fight over the same node labels): its NFD pods are removed when Flux applies render's output",
					network.Release)})
		}
	}
	return warns
}
