package fleet

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/imageref"
)

var (
	// dnsLabel is what Kubernetes accepts as an object name segment; names
	// of releases, clusters, pools and waves end up in object names.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// chartVersion is a semantic version with an optional leading v.
	chartVersion = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// driverVersion is an NVIDIA driver version: branch.minor[.patch].
	driverVersion = regexp.MustCompile(`^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$`)
	// driverBranch is an NVIDIA driver branch, what a precompiled driver
	// names instead of a version.
	driverBranch = regexp.MustCompile(`^[0-9]{3}$`)
	// kubeMinor is a Kubernetes minor version, "1.31" (a patch release
	// "1.31.4" or a leading v is accepted).
	kubeMinor = regexp.MustCompile(`^v?1\.[0-9]{1,3}(\.[0-9]+)?$`)
	// labelValue is a Kubernetes label value (GPU product names are label values).
	labelValue = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	// dnsSubdomain is a Kubernetes object name that may hold dots (a
	// Secret's): DNS labels joined by single dots, so never "." or "..".
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Every name the fleet file gives that render or `gpufleet secret` puts in
// a path (clusters/<cluster>/, apps/<environment>/<service>/,
// secret-<secret>.sops.yaml, nvidiadriver-<pool>-…, namespace-<ns>.yaml)
// is checked here as a DNS label (a Secret's name as a DNS subdomain):
// none can hold a slash, a "..", a newline or anything a shell or a CI
// log would read as more than a name. render's writer refuses such paths
// again (render.checkPath), in case a name ever bypasses these checks.

// reservedEnvironments are the environment names whose folders render
// already writes for something else.
var reservedEnvironments = map[string]string{
	"base": "apps/base holds every service's base, which the overlays of an environment named base would overwrite",
}

// validate checks everything Parse decoded, adding every problem to probs.
func (f *Fleet) validate(probs *problemList) {
	if len(f.Releases) == 0 {
		probs.add("releases", "the fleet has no releases: add at least one [releases.<name>] table")
	}
	if len(f.Clusters) == 0 {
		probs.add("clusters", "the fleet has no clusters: add at least one [clusters.<name>] table")
	}
	f.validateCharts(probs)
	for _, name := range f.ReleaseNames() {
		f.Releases[name].Name = name
		f.validateRelease(probs, f.Releases[name])
	}
	for _, name := range f.ClusterNames() {
		f.Clusters[name].Name = name
		f.validateCluster(probs, f.Clusters[name])
	}
	f.validateControllers(probs)
	f.validateWaves(probs)
	f.validatePolicy(probs)
	f.validateOFEDActuator(probs)
	f.validateInstalls(probs)
	f.validatePromotion(probs)
	f.validateNetworkOperatorKept(probs)
	f.validateStack(probs)
	f.validateGitOps(probs, f.gitops)
}

func (f *Fleet) validateCharts(probs *problemList) {
	repo := f.Charts.Repository
	u, err := url.Parse(repo)
	isURL := err == nil && (u.Scheme == "https" || u.Scheme == "http" || u.Scheme == "oci") && u.Host != ""
	switch {
	case repo == "":
		f.Charts.Repository = DefaultChartRepository
	case isURL:
	case f.Charts.Mode == ModeManifests && (err != nil || u.Scheme == ""):
		// gpufleet renders the charts itself in this mode, so they may come
		// from a folder (a vendored mirror, <chart>/<version>/) or a .tgz,
		// named relative to the fleet file like everything it names.
		if !filepath.IsAbs(repo) {
			f.Charts.Repository = filepath.Join(filepath.Dir(f.Path), repo)
			f.Charts.InRepository = true
		}
	default:
		hint := ""
		if f.Charts.Mode != ModeManifests {
			hint = `; with mode = "manifests" a folder of charts also works`
		}
		probs.add("charts.repository", "%q is not a Helm repository URL (https://...) or an OCI reference (oci://...)%s", repo, hint)
	}
	switch f.Charts.Mode {
	case "":
		f.Charts.Mode = ModeHelmRelease
	case ModeHelmRelease, ModeManifests:
	default:
		probs.add("charts.mode", "%q is not a chart mode: use %q or %q", f.Charts.Mode, ModeHelmRelease, ModeManifests)
	}
}

func (f *Fleet) validateRelease(probs *problemList, r *Release) {
	key := joinKey("releases", r.Name)
	checkName(probs, key, "release", r.Name)
	empty := checkEmptyVersions(probs, key, r)
	if !empty["gpu-operator"] {
		checkRequired(probs, key, "gpu-operator", r.GPUOperator, chartVersion, "a chart version such as v25.10.1")
	}
	// The Network Operator is optional: a fleet adopted from clusters that
	// run none has releases without it, and "none" says so on purpose
	// (validateNetworkOperatorKept says when it must be said).
	if r.RunsNetworkOperator() && !chartVersion.MatchString(r.NetworkOperator) {
		probs.add(key+".network-operator", "%q is not a chart version such as v25.4.0, or %q for a release that runs no Network Operator", r.NetworkOperator, NoNetworkOperator)
	}
	if !empty["driver"] {
		checkDriver(probs, key, r)
	}
	checkOFEDDriver(probs, key, r)
	if v := r.ControllerVersion(); r.Controller != "" && !chartVersion.MatchString(v) {
		probs.add(key+".controller", "%q is not a gpufleet-controller version such as v0.9.0 (the image's tag), optionally pinned to its build as v0.9.0@sha256:<64 hex digits>", r.Controller)
	}
}

// checkEmptyVersions refuses a version key written with an empty value
// (driver = ""), at the key, and returns the keys it refused. An empty
// string reads like "unset", yet for network-operator it used to mean
// "run none", removing the operator from every cluster the release
// reaches: a removal is written network-operator = "none", and a version
// is written out.
func checkEmptyVersions(probs *problemList, key string, r *Release) map[string]bool {
	driver := "a driver version such as 580.95.05"
	if r.Precompiled {
		driver = `a driver branch such as "570" (precompiled = true)`
	}
	empty := map[string]bool{}
	for _, k := range []struct{ name, value, want string }{
		{"gpu-operator", r.GPUOperator, "the GPU Operator's chart version, such as v25.10.1"},
		{"network-operator", r.NetworkOperator, fmt.Sprintf("the Network Operator's chart version, such as v25.4.0, or network-operator = %q for a release that runs none (and removes it from the clusters it reaches)", NoNetworkOperator)},
		{"driver", r.Driver, driver},
	} {
		if k.value != "" || !probs.pos.has(key+"."+k.name) {
			continue
		}
		empty[k.name] = true
		probs.add(key+"."+k.name, "%s is empty: write %s", k.name, k.want)
	}
	return empty
}

// validateControllers checks [controller] and the releases' controller
// versions together. Either no release names a controller version (the
// controller is installed outside the fleet file, by hand) or every
// release does: a release without one would have render drop the
// controller's install from the clusters it reaches, and Flux would prune
// the controller there in the middle of the promotion.
func (f *Fleet) validateControllers(probs *problemList) {
	var with, without []string
	for _, name := range f.ReleaseNames() {
		if f.Releases[name].Controller != "" {
			with = append(with, name)
		} else {
			without = append(without, name)
		}
	}
	img := f.Controller.Image
	var ref imageref.Ref
	var err error
	if img != "" {
		ref, err = imageref.Parse(img)
	}
	switch {
	case img == "" && len(with) > 0:
		probs.add("controller", `image is required where releases name a controller version (releases %s): the image repository without a tag, e.g. image = "registry.example.com/gpufleet/gpufleet-controller"`, strings.Join(with, ", "))
	case err != nil:
		probs.add("controller.image", "%v: write the repository alone, e.g. registry.example.com/gpufleet/gpufleet-controller, or one image pinned by digest, …/gpufleet-controller@sha256:<64 hex digits>", err)
	case ref.Tag != "" && !ref.Pinned():
		probs.add("controller.image", "%q names a tag without a digest: write the repository alone (each release's controller version is the tag, and may pin its build: controller = \"v0.9.0@sha256:…\"), or pin one image for every cluster by digest (%s@sha256:…)", img, ref.Repository)
	case img != "" && len(with) == 0:
		probs.add("controller.image", "no release names a controller version: add controller = \"v0.9.0\" (say) to each release, or drop [controller]")
	case ref.Pinned():
		f.validatePinnedController(probs, ref, with)
	case img != "":
		// Each release's image is what render writes: the one parser reads
		// it whole, so a release's digest is checked as a runtime reads it.
		for _, name := range with {
			if _, err := imageref.Parse(f.ControllerImage(f.Releases[name])); err != nil {
				probs.add(joinKey("releases", name)+".controller", "%v", err)
			}
		}
	}
	if len(with) > 0 {
		for _, name := range without {
			probs.add(joinKey("releases", name), "controller is required: releases %s name a controller version, and a release without one would remove gpufleet-controller from every cluster it reaches", strings.Join(with, ", "))
		}
	}
}

// validatePinnedController checks the releases against a [controller]
// image pinned by digest. That one image is what every cluster runs,
// whatever its release, so the releases all name its one version (the
// Deployment's version label, and the image's tag where it has one) and
// none pins a build of its own: a second pin, or a version the image is
// not, would be a label that lies about what runs.
func (f *Fleet) validatePinnedController(probs *problemList, ref imageref.Ref, with []string) {
	versions := map[string]bool{}
	for _, name := range with {
		r := f.Releases[name]
		key := joinKey("releases", name) + ".controller"
		switch {
		case r.Controller != r.ControllerVersion():
			probs.add(key, "%q pins a build, and [controller] image pins one for every release already (%s): pin in one place", r.Controller, f.Controller.Image)
		case ref.Tag != "" && r.Controller != ref.Tag:
			probs.add(key, "%q is not %s, the tag of the pinned [controller] image every cluster runs: name that version, or write the image as a repository and pin each release's build (controller = \"%s@sha256:…\")", r.Controller, ref.Tag, r.Controller)
		}
		versions[r.ControllerVersion()] = true
	}
	if ref.Tag == "" && len(versions) > 1 {
		probs.add("controller.image", "pins one image for every cluster, and the releases name controller versions %s: with a pinned image they all name its one version (or write the image as a repository and pin each release's build: controller = \"v0.9.0@sha256:…\", which follows the waves)",
			strings.Join(slices.Sorted(maps.Keys(versions)), ", "))
	}
}

// checkDriver checks that a release's driver and its precompiled setting
// agree: a full version builds the driver on each node, a branch (only
// with precompiled = true) takes the operator's precompiled images. A
// branch without the setting is refused rather than guessed at, since
// "570" is as likely a truncated version as a request for precompiled
// drivers, and the two install different things.
func checkDriver(probs *problemList, key string, r *Release) {
	switch {
	case r.Driver == "" && r.Precompiled:
		probs.add(key, `driver is required (a driver branch such as "570", as precompiled = true)`)
	case r.Driver == "":
		probs.add(key, "driver is required (a driver version such as 580.95.05)")
	case r.Precompiled && driverVersion.MatchString(r.Driver):
		branch, _, _ := strings.Cut(r.Driver, ".")
		probs.add(key+".driver", `%q is a driver version, but precompiled drivers are chosen by branch: write driver = %q, or drop precompiled = true to build %s on each node`, r.Driver, branch, r.Driver)
	case r.Precompiled && !driverBranch.MatchString(r.Driver):
		probs.add(key+".driver", `%q is not a driver branch such as "570" (precompiled = true)`, r.Driver)
	case !r.Precompiled && driverBranch.MatchString(r.Driver):
		probs.add(key+".driver", `%q is a driver branch, not a version: write the full version (e.g. 580.95.05), or, for the GPU Operator's precompiled drivers of branch %s, add precompiled = true to [%s]`, r.Driver, r.Driver, key)
	case !r.Precompiled && !driverVersion.MatchString(r.Driver):
		probs.add(key+".driver", "%q is not a driver version such as 580.95.05", r.Driver)
	}
}

// IsDriverBranch reports whether driver names a driver branch ("570", a
// precompiled driver) rather than a full version ("570.86.15"). The fleet
// file allows a branch only on a release with precompiled = true.
func IsDriverBranch(driver string) bool { return driverBranch.MatchString(driver) }

func (f *Fleet) validateCluster(probs *problemList, c *Cluster) {
	key := joinKey("clusters", c.Name)
	checkName(probs, key, "cluster", c.Name)
	switch why, reserved := reservedEnvironments[c.Environment]; {
	case c.Environment == "":
		probs.add(key, "environment is required (e.g. staging, prod)")
	case !dnsLabel.MatchString(c.Environment) || len(c.Environment) > 63:
		probs.add(key+".environment", "%q is not a valid environment name: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", c.Environment)
	case reserved:
		probs.add(key+".environment", "%q is reserved and cannot name an environment: %s", c.Environment, why)
	}
	if c.Context == "" {
		// The kubeconfig context defaults to the cluster's name, as most
		// fleets name their contexts after their clusters.
		c.Context = c.Name
	}
	if c.Kubernetes != "" && !kubeMinor.MatchString(c.Kubernetes) {
		probs.add(key+".kubernetes", "%q is not a Kubernetes minor version such as \"1.31\"", c.Kubernetes)
	}
	if len(c.Pools) == 0 {
		probs.add(key, "cluster has no GPU pools: add at least one [[clusters.%s.pools]]", c.Name)
	}
	seen := map[string]int{}
	for i, p := range c.Pools {
		pkey := fmt.Sprintf("%s.pools[%d]", key, i)
		if p.Name == "" {
			probs.add(pkey, "pool name is required")
		} else {
			checkName(probs, pkey+".name", "pool", p.Name)
			if j, dup := seen[p.Name]; dup {
				probs.add(pkey+".name", "duplicate pool name %q (also pools[%d])", p.Name, j)
			}
			seen[p.Name] = i
		}
		if p.Product == "" {
			probs.add(pkey, "product is required: the GPU as GPU Feature Discovery reports it, e.g. NVIDIA-H100-80GB-HBM3")
		} else if !labelValue.MatchString(p.Product) || len(p.Product) > 63 {
			probs.add(pkey+".product", "%q is not a valid nvidia.com/gpu.product label value", p.Product)
		}
		if p.Nodes < 1 {
			probs.add(pkey+".nodes", "nodes must be at least 1, got %d", p.Nodes)
		}
		checkMIG(probs, pkey+".mig", p)
		checkPoolNetwork(probs, pkey, p)
	}
}

func (f *Fleet) validateWaves(probs *problemList) {
	if len(f.Waves) == 0 && len(f.Clusters) > 0 {
		probs.add("waves", "the fleet has no waves: add [[waves]] tables that list every cluster")
	}
	waveOf := map[string]int{}
	names := map[string]int{}
	for i, w := range f.Waves {
		key := fmt.Sprintf("waves[%d]", i)
		if w.Name == "" {
			probs.add(key, "wave name is required")
		} else {
			checkName(probs, key+".name", "wave", w.Name)
			if j, dup := names[w.Name]; dup {
				probs.add(key+".name", "duplicate wave name %q (also waves[%d])", w.Name, j)
			}
			names[w.Name] = i
		}
		if len(w.Clusters) == 0 {
			probs.add(key, "wave %q has no clusters", w.Name)
		}
		for j, c := range w.Clusters {
			ckey := fmt.Sprintf("%s.clusters[%d]", key, j)
			if _, ok := f.Clusters[c]; !ok {
				probs.add(ckey, "unknown cluster %q%s", c, suggest(c, f.ClusterNames()))
				continue
			}
			if k, dup := waveOf[c]; dup {
				probs.add(ckey, "cluster %q is in two waves: %q and %q", c, f.Waves[k].Name, w.Name)
				continue
			}
			waveOf[c] = i
		}
		if w.Canary != "" && !contains(w.Clusters, w.Canary) {
			probs.add(key+".canary", "canary %q is not one of the wave's clusters %v", w.Canary, w.Clusters)
		}
		if w.PauseAfterCanary && w.Canary == "" {
			probs.add(key+".pause-after-canary", "pause-after-canary needs a canary cluster in wave %q", w.Name)
		}
	}
	if len(f.Waves) > 0 {
		for _, c := range f.ClusterNames() {
			if _, ok := waveOf[c]; !ok {
				probs.add(joinKey("clusters", c), "cluster %q is in no wave: add it to one [[waves]] clusters list", c)
			}
		}
	}
}

func checkName(probs *problemList, key, what, name string) {
	if !dnsLabel.MatchString(name) || len(name) > 63 {
		probs.add(key, "%q is not a valid %s name: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", name, what)
	}
}

func checkRequired(probs *problemList, table, field, value string, re *regexp.Regexp, want string) {
	switch {
	case value == "":
		probs.add(table, "%s is required (%s)", field, want)
	case !re.MatchString(value):
		probs.add(table+"."+field, "%q is not %s", value, want)
	}
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// suggest returns a hint naming the closest known name, if one is close.
func suggest(got string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(got, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		if len(known) > 0 && len(known) <= 8 {
			return fmt.Sprintf(" (known: %s)", strings.Join(known, ", "))
		}
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
