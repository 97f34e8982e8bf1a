package fleet

import (
	"regexp"
	"slices"
	"strings"
)

// migGPU is one GPU whose MIG profiles gpufleet knows.
type migGPU struct {
	// Name is the GPU as NVIDIA's MIG user guide names it.
	Name string
	// Model is the model word of its nvidia.com/gpu.product label
	// (NVIDIA-A100-SXM4-80GB → A100).
	Model string
	// Variants tell apart GPUs of one model with different memory: the
	// label must carry one of these words; none means any label of Model.
	Variants []string
	// Profiles are the GPU instance profiles it offers.
	Profiles []string
}

// migGPUs are the GPUs gpufleet checks MIG configurations against, with the
// GPU instance profiles each offers, from NVIDIA's MIG user guide
// ("Supported MIG Profiles") and the per-GPU sections of mig-parted's
// default configuration. A profile's memory size is part of its name and
// differs between GPUs of one model: 1g.5gb exists on an A100 40GB, never on
// an A100 80GB, whose smallest slice is 1g.10gb. Order matters: a GPU with
// Variants comes before one of the same model without.
//
// Note: a configuration the GPU does not offer is not caught by anything
// downstream until mig-manager fails on the node, which then stays out of
// service; so an unknown product with MIG is refused, not waved through.
var migGPUs = []migGPU{
	{Name: "A100 40GB", Model: "A100", Variants: []string{"40GB"},
		Profiles: []string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
	{Name: "A100 80GB", Model: "A100", Variants: []string{"80GB"},
		Profiles: []string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	{Name: "A30 24GB", Model: "A30",
		Profiles: []string{"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"}},
	// H100 NVL and H100 SXM5 94GB.
	{Name: "H100 94GB", Model: "H100", Variants: []string{"NVL", "94GB"},
		Profiles: []string{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"}},
	{Name: "H100 96GB", Model: "H100", Variants: []string{"96GB"},
		Profiles: []string{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}},
	// H100 SXM5 80GB (NVIDIA-H100-80GB-HBM3) and H100 PCIe.
	{Name: "H100 80GB", Model: "H100", Variants: []string{"80GB", "PCIE"},
		Profiles: []string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	// H200 SXM and H200 NVL, 141GB.
	{Name: "H200 141GB", Model: "H200",
		Profiles: []string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
	{Name: "GH200 144GB HBM3e", Model: "GH200", Variants: []string{"144G", "144GB", "HBM3E"},
		Profiles: []string{"1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"}},
	// GH200 480GB: its GPU has 96GB of HBM3.
	{Name: "GH200 96GB", Model: "GH200",
		Profiles: []string{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"}},
	{Name: "B200 180GB", Model: "B200",
		Profiles: []string{"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"}},
	{Name: "GB200 186GB", Model: "GB200",
		Profiles: []string{"1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"}},
}

// nonMIGModels are data-centre GPUs that have no MIG at all, named so the
// message can say so rather than "unknown".
var nonMIGModels = []string{"L40S", "L40", "L20", "L4", "A40", "A10", "A10G", "A16", "A2", "T4", "V100", "P100", "P4"}

// migConfig is the form of a mig-manager configuration name, as in
// mig-parted's default configuration: all-disabled, all-balanced, or every
// GPU in one profile (all-1g.10gb; all-1g.10gb.me for its +me variant).
var migConfig = regexp.MustCompile(`^(all-disabled|all-balanced|all-[1-7]g\.[0-9]+gb(\.me)?)$`)

// migGPUFor returns the GPU a product label names, or nil when it names
// none that gpufleet knows the MIG profiles of.
func migGPUFor(product string) *migGPU {
	words := strings.Split(strings.ToUpper(product), "-")
	for i := range migGPUs {
		g := &migGPUs[i]
		if !slices.Contains(words, g.Model) {
			continue
		}
		if len(g.Variants) == 0 || slices.ContainsFunc(g.Variants, func(v string) bool { return slices.Contains(words, v) }) {
			return g
		}
	}
	return nil
}

// configs lists the mig-manager configurations the GPU can take.
func (g *migGPU) configs() []string {
	out := []string{"all-disabled", "all-balanced"}
	for _, p := range g.Profiles {
		out = append(out, "all-"+strings.ReplaceAll(p, "+me", ".me"))
	}
	return out
}

// migCapableNames lists the GPUs with a MIG table, for messages.
func migCapableNames() string {
	names := make([]string, len(migGPUs))
	for i, g := range migGPUs {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}

// checkMIG checks a pool's MIG configuration against the profiles its GPU
// offers (see migGPUs), reporting at key (the pool's mig key).
func checkMIG(probs *problemList, key string, p *Pool) {
	if p.MIG == "" {
		return
	}
	if !migConfig.MatchString(p.MIG) {
		probs.add(key, "%q is not a MIG configuration: use e.g. all-1g.10gb, all-balanced or all-disabled", p.MIG)
		return
	}
	if p.Product == "" {
		return // reported as missing already
	}
	g := migGPUFor(p.Product)
	if g == nil {
		words := strings.Split(strings.ToUpper(p.Product), "-")
		if slices.ContainsFunc(nonMIGModels, func(m string) bool { return slices.Contains(words, m) }) {
			probs.add(key, "%s does not support MIG: remove mig from this pool (GPUs with MIG: %s)", p.Product, migCapableNames())
			return
		}
		probs.add(key, "gpufleet does not know the MIG profiles of %s, so it cannot check %q: MIG is checked for %s (write product as GPU Feature Discovery reports it, e.g. NVIDIA-A100-SXM4-80GB)", p.Product, p.MIG, migCapableNames())
		return
	}
	if valid := g.configs(); !slices.Contains(valid, p.MIG) {
		probs.add(key, "%s (%s) does not offer %s: use one of %s", p.Product, g.Name, p.MIG, strings.Join(valid, ", "))
	}
}
