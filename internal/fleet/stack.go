package fleet

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/versions"
)

// Stack is the LLM serving stack that runs on the fleet's GPU clusters:
// services with their dependencies, start-up times and per-environment
// settings. Render writes it as Flux objects (base + overlays).
type Stack struct {
	// ReviewBranch is the branch prefix image automation pushes to, one
	// branch per environment ("<review-branch>/<environment>"), so a person
	// reviews every image bump before it reaches main.
	ReviewBranch string `toml:"review-branch"`
	// AgeRecipients are the age public keys that SOPS encrypts each
	// environment's secrets to.
	AgeRecipients map[string]string `toml:"age-recipients"`
	// AlertURL, when set, receives Flux alerts for failed reconciliations.
	AlertURL string              `toml:"alert-url"`
	Services map[string]*Service `toml:"services"`
}

// Service layers, in the order a stack comes up.
var layers = []string{"data", "engine", "gateway", "front", "observability"}

// Service is one service of the serving stack: a Helm chart, or an image
// that render writes a Deployment and Service for.
type Service struct {
	Name string `toml:"-"`
	// Layer is one of data, engine, gateway, front, observability.
	Layer     string   `toml:"layer"`
	Namespace string   `toml:"namespace"`
	DependsOn []string `toml:"depends-on"`
	// Startup is how long the service takes to become healthy (a large
	// model can take minutes); Flux waits longer than this.
	Startup string `toml:"startup"`
	Chart   *Chart `toml:"chart"`
	// Image, Tag and TagRange describe an image-based service; TagRange is
	// the semver range image automation may move Tag within.
	Image    string   `toml:"image"`
	Tag      string   `toml:"tag"`
	TagRange string   `toml:"tag-range"`
	Port     int      `toml:"port"`
	Health   string   `toml:"health"`
	Args     []string `toml:"args"`
	// Secrets names Secrets the service reads, kept SOPS-encrypted per
	// environment (see `gpufleet secret`).
	Secrets      []string                   `toml:"secrets"`
	Environments map[string]*ServiceSetting `toml:"environments"`

	StartupDuration time.Duration `toml:"-"`
}

// Chart is a Helm chart a service is installed from.
type Chart struct {
	Repository string `toml:"repository"`
	Name       string `toml:"name"`
	Version    string `toml:"version"`
}

// ServiceSetting is a service's settings in one environment.
type ServiceSetting struct {
	Replicas *int   `toml:"replicas"`
	Model    string `toml:"model"`
	// GPUProduct places the service on nodes with this GPU (nodeSelector
	// on nvidia.com/gpu.product).
	GPUProduct string `toml:"gpu-product"`
	// MIG is a MIG profile such as 1g.10gb: the service requests the
	// nvidia.com/mig-<profile> resource instead of whole GPUs.
	MIG  string `toml:"mig"`
	GPUs int    `toml:"gpus"`
	// GPUMemoryUtilization and TensorParallelSize are vLLM's
	// --gpu-memory-utilization and --tensor-parallel-size.
	GPUMemoryUtilization float64 `toml:"gpu-memory-utilization"`
	TensorParallelSize   int     `toml:"tensor-parallel-size"`
	TagRange             string  `toml:"tag-range"`
	// Clusters, when set, are the clusters of the environment the service
	// runs on; otherwise it runs on every cluster with a pool that fits it
	// (see Fits).
	Clusters []string `toml:"clusters"`
}

// UsesGPU reports whether the setting places the service on GPUs.
func (s *ServiceSetting) UsesGPU() bool {
	return s != nil && (s.GPUProduct != "" || s.MIG != "" || s.GPUs > 0)
}

// ServiceNames returns the stack's services in dependency order (a service
// after everything it depends on), ties broken by layer then name.
func (s *Stack) ServiceNames() []string {
	if s == nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(s.Services))
	slices.SortStableFunc(names, func(a, b string) int {
		return slices.Index(layers, s.Services[a].Layer) - slices.Index(layers, s.Services[b].Layer)
	})
	var order []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		for _, d := range s.Services[n].DependsOn {
			if _, ok := s.Services[d]; ok {
				visit(d)
			}
		}
		order = append(order, n)
	}
	for _, n := range names {
		visit(n)
	}
	return order
}

// Environments returns the environments of the fleet's clusters, sorted.
func (f *Fleet) Environments() []string {
	set := map[string]bool{}
	for _, c := range f.Clusters {
		set[c.Environment] = true
	}
	return slices.Sorted(maps.Keys(set))
}

var (
	migSlice = regexp.MustCompile(`^[1-7]g\.[0-9]+gb$`)
	imageRef = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)
)

func (f *Fleet) validateStack(probs *problemList) {
	s := f.Stack
	if s == nil {
		return
	}
	if s.ReviewBranch == "" {
		s.ReviewBranch = "image-updates"
	}
	envs := f.Environments()
	for _, env := range slices.Sorted(maps.Keys(s.AgeRecipients)) {
		key := joinKey("stack.age-recipients", env)
		if !slices.Contains(envs, env) {
			probs.add(key, "no cluster has environment %q%s", env, suggest(env, envs))
		}
		if err := checkAgeRecipient(s.AgeRecipients[env]); err != nil {
			probs.add(key, "%v", err)
		}
	}
	if s.AlertURL != "" {
		if u, err := url.Parse(s.AlertURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			probs.add("stack.alert-url", "%q is not an http(s) URL", s.AlertURL)
		}
	}
	if len(s.Services) == 0 {
		probs.add("stack", "the stack has no services: add [stack.services.<name>] tables")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Services)) {
		svc := s.Services[name]
		svc.Name = name
		f.validateService(probs, svc, envs)
	}
	if cycle := findCycle(s); cycle != nil {
		probs.add(joinKey("stack.services", cycle[0])+".depends-on", "dependency cycle: %s", strings.Join(cycle, " → "))
	}
	f.validatePlacement(probs)
}

func (f *Fleet) validateService(probs *problemList, svc *Service, envs []string) {
	key := joinKey("stack.services", svc.Name)
	checkName(probs, key, "service", svc.Name)
	if svc.Layer == "" {
		probs.add(key, "layer is required: one of %s", strings.Join(layers, ", "))
	} else if !slices.Contains(layers, svc.Layer) {
		probs.add(key+".layer", "%q is not a layer: use one of %s", svc.Layer, strings.Join(layers, ", "))
	}
	if svc.Namespace == "" {
		probs.add(key, "namespace is required")
	} else if !dnsLabel.MatchString(svc.Namespace) || len(svc.Namespace) > 63 {
		probs.add(key+".namespace", "%q is not a valid namespace: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", svc.Namespace)
	}
	seen := map[string]int{}
	for i, name := range svc.Secrets {
		skey := fmt.Sprintf("%s.secrets[%d]", key, i)
		switch j, dup := seen[name]; {
		case !dnsSubdomain.MatchString(name) || len(name) > 253:
			probs.add(skey, "%q is not a valid Secret name: use lower-case letters, digits, '-' and '.' (at most 253), starting and ending with a letter or digit; it names the file apps/<environment>/%s/secret-<name>.sops.yaml", name, svc.Name)
		case dup:
			probs.add(skey, "duplicate secret %q (also secrets[%d])", name, j)
		}
		seen[name] = i
	}
	if d, err := time.ParseDuration(svc.Startup); err != nil || d <= 0 {
		if svc.Startup == "" {
			probs.add(key, "startup is required: how long the service takes to become healthy, e.g. 5m")
		} else {
			probs.add(key+".startup", "%q is not a duration: use e.g. 90s or 10m", svc.Startup)
		}
	} else {
		svc.StartupDuration = d
	}
	for i, d := range svc.DependsOn {
		if _, ok := f.Stack.Services[d]; !ok {
			probs.add(fmt.Sprintf("%s.depends-on[%d]", key, i), "unknown service %q%s", d, suggest(d, slices.Sorted(maps.Keys(f.Stack.Services))))
		} else if d == svc.Name {
			probs.add(fmt.Sprintf("%s.depends-on[%d]", key, i), "a service cannot depend on itself")
		}
	}
	switch {
	case svc.Chart != nil && svc.Image != "":
		probs.add(key, "set either chart or image, not both")
	case svc.Chart == nil && svc.Image == "":
		probs.add(key, "set chart = { repository, name, version } or image, tag and tag-range")
	case svc.Chart != nil:
		c := svc.Chart
		if u, err := url.Parse(c.Repository); err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci") {
			probs.add(key+".chart", "chart repository %q is not a Helm repository URL or oci:// reference", c.Repository)
		}
		if c.Name == "" || c.Version == "" {
			probs.add(key+".chart", "chart needs name and version")
		}
	default:
		if !imageRef.MatchString(svc.Image) {
			probs.add(key+".image", "%q is not an image name (without tag), e.g. vllm/vllm-openai", svc.Image)
		}
		checkTag(probs, key, svc.Tag, svc.TagRange)
		if svc.Port < 1 || svc.Port > 65535 {
			probs.add(key, "port is required for an image service (1-65535)")
		}
		if svc.Health != "" && !strings.HasPrefix(svc.Health, "/") {
			probs.add(key+".health", "%q is not an HTTP path", svc.Health)
		}
	}
	for _, env := range slices.Sorted(maps.Keys(svc.Environments)) {
		ekey := joinKey(key+".environments", env)
		if !slices.Contains(envs, env) {
			probs.add(ekey, "no cluster has environment %q%s", env, suggest(env, envs))
			continue
		}
		f.validateServiceSetting(probs, ekey, env, svc, svc.Environments[env])
	}
}

func checkTag(probs *problemList, key, tag, tagRange string) {
	v, tagErr := versions.Parse(tag)
	if tagErr != nil {
		probs.add(key+".tag", "%q is not a semantic version tag", tag)
	}
	r, err := versions.ParseRange(tagRange)
	switch {
	case tagRange == "":
		probs.add(key, "tag-range is required: the semver range image automation may move the tag in, e.g. \">=0.8.0 <0.9.0\"")
	case err != nil:
		probs.add(key+".tag-range", "%q is not a semver range: %v", tagRange, err)
	case tagErr == nil && !r.Contains(v):
		probs.add(key+".tag", "tag %s is outside its tag-range %q", tag, tagRange)
	}
}

func (f *Fleet) validateServiceSetting(probs *problemList, key, env string, svc *Service, s *ServiceSetting) {
	if s.Replicas != nil && *s.Replicas < 0 {
		probs.add(key+".replicas", "replicas must be 0 or more, got %d", *s.Replicas)
	}
	if s.GPUMemoryUtilization < 0 || s.GPUMemoryUtilization > 1 {
		probs.add(key+".gpu-memory-utilization", "gpu-memory-utilization must be within (0, 1], got %v", s.GPUMemoryUtilization)
	}
	if s.TensorParallelSize < 0 || (s.TensorParallelSize > 0 && s.GPUs > 0 && s.TensorParallelSize > s.GPUs) {
		probs.add(key+".tensor-parallel-size", "tensor-parallel-size %d needs at least as many GPUs, got gpus = %d", s.TensorParallelSize, s.GPUs)
	}
	if s.TagRange != "" {
		if svc.Image == "" {
			probs.add(key+".tag-range", "tag-range applies to image services only")
		} else if _, err := versions.ParseRange(s.TagRange); err != nil {
			probs.add(key+".tag-range", "%q is not a semver range: %v", s.TagRange, err)
		}
	}
	var products, migs []string
	for _, c := range f.Clusters {
		if c.Environment != env {
			continue
		}
		for _, p := range c.Pools {
			products = append(products, p.Product)
			migs = append(migs, p.MIG)
		}
	}
	if s.GPUProduct != "" && !slices.Contains(products, s.GPUProduct) {
		probs.add(key+".gpu-product", "no pool in environment %q has GPU %q%s", env, s.GPUProduct, suggest(s.GPUProduct, uniq(products)))
	}
	if s.MIG != "" {
		switch {
		case !migSlice.MatchString(s.MIG):
			probs.add(key+".mig", "%q is not a MIG profile such as 1g.10gb", s.MIG)
		case !slices.Contains(migs, "all-"+s.MIG) && !slices.Contains(migs, "all-balanced"):
			probs.add(key+".mig", "no pool in environment %q offers MIG profile %s (pools offer: %s)", env, s.MIG, strings.Join(uniq(nonEmpty(migs)), ", "))
		}
		if s.GPUs > 0 {
			probs.add(key+".gpus", "set gpus or mig, not both: a MIG slice is requested instead of whole GPUs")
		}
	}
}

// findCycle returns the services of one dependency cycle, first repeated
// at the end ("a → b → a"), or nil.
func findCycle(s *Stack) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var cycle []string
	var visit func(string) bool
	visit = func(n string) bool {
		state[n] = onPath
		path = append(path, n)
		for _, d := range s.Services[n].DependsOn {
			if _, ok := s.Services[d]; !ok {
				continue
			}
			switch state[d] {
			case onPath:
				i := slices.Index(path, d)
				cycle = append(slices.Clone(path[i:]), d)
				return true
			case unseen:
				if visit(d) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return false
	}
	for _, n := range slices.Sorted(maps.Keys(s.Services)) {
		if state[n] == unseen && visit(n) {
			return cycle
		}
	}
	return nil
}

func uniq(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
