package adopt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// gpuKey is what makes nodes one pool: the GPU and its MIG layout.
type gpuKey struct {
	Product string // BaseProduct of the label
	MIG     string // "" without MIG
}

func (k gpuKey) String() string {
	if k.MIG == "" {
		return k.Product
	}
	return k.Product + " with MIG " + k.MIG
}

// placedNode is a GPU node with a product: one that can be in a pool.
type placedNode struct {
	name   string
	key    gpuKey
	pool   string // gpufleet.io/pool, "" when unlabelled
	driver string // what it runs ("" when not reported)
	// How it hands its GPUs out: DRA (the GPU DRA driver publishes its
	// devices) and the device plugin (allocatable GPUs); both, on a node
	// of a cluster with GPU DRA slices, or neither, elsewhere.
	dra, devicePlugin bool
	// productFromSlices says key.Product was read from its DRA slices:
	// the node carries no GPU product label.
	productFromSlices bool
}

// formPools groups placed nodes into pools: nodes labelled gpufleet.io/pool
// by that label, the others by GPU product and MIG layout, named by
// poolNames. Pools come sorted by name, their nodes by name.
//
// It refuses to guess (problems, for cluster) where the labels and the GPUs
// disagree: a pool label that is not a valid pool name, one pool label on
// nodes of different GPUs or MIG layouts, and nodes without the label
// beside labelled nodes of the same GPU and layout (a node that joined
// without its label, or a second pool? only a person knows).
func formPools(cluster string, nodes []placedNode) ([]*Pool, Problems) {
	var probs Problems
	labelled := map[string]map[gpuKey][]string{} // pool → key → nodes
	labelsOf := map[gpuKey][]string{}            // key → pool labels on it
	unlabelled := map[gpuKey][]string{}
	for _, n := range nodes {
		if n.pool == "" {
			unlabelled[n.key] = append(unlabelled[n.key], n.name)
			continue
		}
		if labelled[n.pool] == nil {
			labelled[n.pool] = map[gpuKey][]string{}
		}
		if len(labelled[n.pool][n.key]) == 0 {
			labelsOf[n.key] = append(labelsOf[n.key], n.pool)
		}
		labelled[n.pool][n.key] = append(labelled[n.pool][n.key], n.name)
	}
	var pools []*Pool
	taken := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(labelled)) {
		byKey := labelled[name]
		keys := sortedGPUKeys(byKey)
		var all []string
		for _, k := range keys {
			all = append(all, byKey[k]...)
		}
		slices.Sort(all)
		if !ValidName(name) {
			probs = append(probs, Problem{Cluster: cluster, Reason: ReasonPoolLabel, Nodes: all,
				Message: fmt.Sprintf("%s %s carry %s=%q, which is not a valid pool name (at most %d lower-case letters, digits and '-'): relabel them (kubectl label node --overwrite … %s=NAME) and run init again",
					nodeWord(len(all)), nodeList(all), v1alpha1.LabelPool, name, maxName, v1alpha1.LabelPool)})
		}
		if len(keys) > 1 {
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s on %s", k, nodeList(byKey[k])))
			}
			probs = append(probs, Problem{Cluster: cluster, Reason: ReasonPoolLabel, Nodes: all,
				Message: fmt.Sprintf("pool %q (%s) holds different GPUs or MIG layouts: %s; a pool is one GPU and one layout: give each its own %s and run init again",
					name, v1alpha1.LabelPool, strings.Join(parts, "; "), v1alpha1.LabelPool)})
		}
		taken[name] = true
		pools = append(pools, &Pool{Name: name, Labelled: true, Product: keys[0].Product, MIG: keys[0].MIG, Nodes: all})
	}
	groups := sortedGPUKeys(unlabelled)
	names := poolNames(groups, taken)
	for _, k := range groups {
		ns := slices.Sorted(slices.Values(unlabelled[k]))
		if labels := labelsOf[k]; len(labels) > 0 {
			slices.Sort(labels)
			probs = append(probs, Problem{Cluster: cluster, Reason: ReasonPoolLabel, Nodes: ns,
				Message: fmt.Sprintf("%s %s (%s) carry no %s, while other nodes of the same GPU carry %s: if they belong there, label them (kubectl label node %s %s=%s); if they are a pool of their own, label them with its name; then run init again",
					nodeWord(len(ns)), nodeList(ns), k, v1alpha1.LabelPool, quoteList(labels), strings.Join(ns, " "), v1alpha1.LabelPool, labels[0])})
		}
		pools = append(pools, &Pool{Name: names[k], Product: k.Product, MIG: k.MIG, Nodes: ns})
	}
	slices.SortFunc(pools, func(a, b *Pool) int { return strings.Compare(a.Name, b.Name) })
	return pools, probs
}

// poolNames names the pools of one cluster that no gpufleet.io/pool label
// names, readably and deterministically, never one of taken (the labelled
// pools' names) and never two alike:
//
//   - the product's model word (NVIDIA-H100-80GB-HBM3 → h100), or the
//     whole product (a100-sxm4-40gb) where another pool has the same model
//     on another product (A100 40GB beside A100 80GB);
//   - "-mig" for a MIG layout, or "-mig-<profile>" (a100-mig-1g-10gb)
//     where pools of one product differ in layout;
//   - "-2", "-3"… only where a label took the name.
func poolNames(groups []gpuKey, taken map[string]bool) map[gpuKey]string {
	products := map[string][]string{} // model → products
	layouts := map[string][]string{}  // product → MIG layouts
	for _, g := range groups {
		m := ProductModel(g.Product)
		if !slices.Contains(products[m], g.Product) {
			products[m] = append(products[m], g.Product)
		}
		if g.MIG != "" && !slices.Contains(layouts[g.Product], g.MIG) {
			layouts[g.Product] = append(layouts[g.Product], g.MIG)
		}
	}
	names := map[gpuKey]string{}
	used := map[string]bool{}
	for k := range taken {
		used[k] = true
	}
	for _, g := range groups {
		base := ProductModel(g.Product)
		if len(products[base]) > 1 {
			base = ProductSlug(g.Product)
		}
		suffix := ""
		switch {
		case g.MIG == "":
		case len(layouts[g.Product]) > 1:
			suffix = "-mig-" + migSlug(g.MIG)
		default:
			suffix = "-mig"
		}
		name := fit(base, suffix)
		for i := 2; used[name]; i++ {
			name = fit(base, fmt.Sprintf("%s-%d", suffix, i))
		}
		used[name] = true
		names[g] = name
	}
	return names
}

func sortedGPUKeys[V any](m map[gpuKey]V) []gpuKey {
	keys := make([]gpuKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b gpuKey) int {
		if c := strings.Compare(a.Product, b.Product); c != 0 {
			return c
		}
		return strings.Compare(a.MIG, b.MIG)
	})
	return keys
}

// quoteList is "a", "b" and "c" quoted, comma-separated.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
