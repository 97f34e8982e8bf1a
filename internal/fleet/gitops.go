package fleet

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/internal/gitops"
)

// DefaultGitOpsBranch is the branch Argo CD follows unless [gitops] says
// otherwise.
const DefaultGitOpsBranch = "main"

// GitOps is [gitops]: which engine applies each cluster's folder, and,
// for Argo CD, where the fleet repository is. Flux learns the repository
// from `flux bootstrap`, which writes its GitRepository; an Argo CD
// Application names its repository itself, so render must know it.
type GitOps struct {
	// Repository is the fleet repository's URL as the clusters' Argo CD
	// reaches it (https://, ssh://, git@host:path, git:// or file://).
	// Required where a cluster is on Argo CD.
	Repository string
	// Branch is the revision Argo CD follows (DefaultGitOpsBranch).
	Branch string

	// engine is [gitops] engine (nil: gitops.Default); environments and
	// clusters override it, in that order.
	engine                 gitops.Engine
	environments, clusters map[string]gitops.Engine
}

// rawGitOps is [gitops] as decoded.
type rawGitOps struct {
	Engine       string                       `toml:"engine"`
	Repository   string                       `toml:"repository"`
	Branch       string                       `toml:"branch"`
	Environments map[string]rawGitOpsOverride `toml:"environments"`
	Clusters     map[string]rawGitOpsOverride `toml:"clusters"`
}

type rawGitOpsOverride struct {
	Engine string `toml:"engine"`
}

// EngineFor is the GitOps engine of cluster: [gitops.clusters.<name>],
// else [gitops.environments.<env>], else [gitops] engine, else
// gitops.Default (Flux). It is never nil.
func (f *Fleet) EngineFor(cluster string) gitops.Engine {
	if e := f.GitOps.clusters[cluster]; e != nil {
		return e
	}
	if c := f.Clusters[cluster]; c != nil {
		if e := f.GitOps.environments[c.Environment]; e != nil {
			return e
		}
	}
	return gitops.Or(f.GitOps.engine)
}

// ArgoCDClusters are the clusters on Argo CD, sorted.
func (f *Fleet) ArgoCDClusters() []string {
	var out []string
	for _, name := range f.ClusterNames() {
		if f.EngineFor(name) == gitops.ArgoCD {
			out = append(out, name)
		}
	}
	return out
}

func (f *Fleet) validateGitOps(probs *problemList, raw rawGitOps) {
	engine := func(key, e string) gitops.Engine {
		if e == "" {
			return nil
		}
		if engine := gitops.For(e); engine != nil {
			return engine
		}
		var others []string
		for _, n := range gitops.Names() {
			if n != gitops.Default.Name() {
				others = append(others, strconv.Quote(n))
			}
		}
		probs.add(key, "%q is not a GitOps engine: use %q (the default) or %s%s", e, gitops.Default.Name(), strings.Join(others, " or "), suggest(e, gitops.Names()))
		return nil
	}
	g := GitOps{Repository: raw.Repository, Branch: raw.Branch, environments: map[string]gitops.Engine{}, clusters: map[string]gitops.Engine{}}
	g.engine = engine("gitops.engine", raw.Engine)
	envs := f.Environments()
	for _, env := range slices.Sorted(maps.Keys(raw.Environments)) {
		key := joinKey("gitops.environments", env)
		if !contains(envs, env) {
			probs.add(key, "no cluster has environment %q%s", env, suggest(env, envs))
		}
		g.environments[env] = engine(key+".engine", raw.Environments[env].Engine)
	}
	for _, c := range slices.Sorted(maps.Keys(raw.Clusters)) {
		key := joinKey("gitops.clusters", c)
		if _, ok := f.Clusters[c]; !ok {
			probs.add(key, "unknown cluster %q%s", c, suggest(c, f.ClusterNames()))
		}
		g.clusters[c] = engine(key+".engine", raw.Clusters[c].Engine)
	}
	if g.Branch == "" {
		g.Branch = DefaultGitOpsBranch
	} else if strings.ContainsAny(g.Branch, " ~^:?*[\\") || strings.HasPrefix(g.Branch, "-") {
		probs.add("gitops.branch", "%q is not a git branch name", g.Branch)
	}
	f.GitOps = g
	argo := f.ArgoCDClusters()
	if len(argo) == 0 {
		return
	}
	where := gitopsKeyFor(f, argo[0])
	switch {
	case g.Repository == "":
		probs.add("gitops", "repository is required where a cluster is on Argo CD (%s, engine set at %s): the fleet repository's URL as Argo CD reaches it, e.g. repository = \"https://git.example.com/platform/fleet.git\"", strings.Join(argo, ", "), where)
	case !gitURL(g.Repository):
		probs.add("gitops.repository", "%q is not a git repository URL (https://, ssh://, git@host:path, git:// or file://)", g.Repository)
	}
	// What an Argo CD cluster cannot do (docs/render-output.md, "What an
	// Argo CD cluster cannot do"): refused where the fleet file asks for
	// it, at the key that asks.
	if f.Charts.Mode != ModeManifests {
		probs.add(where, "cluster %s is on Argo CD, which needs [charts] mode = %q: a Flux HelmRelease has no Argo CD counterpart that keeps both operators in their own namespaces in one ordered sync, while pre-rendered charts are plain objects Argo CD orders by sync waves (and a pull request shows each one)", argo[0], ModeManifests)
	}
	if f.Stack != nil {
		probs.add(where, "cluster %s is on Argo CD, and the serving stack ([stack]) is rendered for Flux only: its SOPS secrets need Flux's decryption and its image automation Flux's image controllers; put the stack's clusters on Flux, or drop [stack]", argo[0])
	}
}

// gitopsKeyFor is the key that puts cluster on its engine.
func gitopsKeyFor(f *Fleet, cluster string) string {
	if _, ok := f.GitOps.clusters[cluster]; ok {
		return joinKey("gitops.clusters", cluster) + ".engine"
	}
	if _, ok := f.GitOps.environments[f.Clusters[cluster].Environment]; ok {
		return joinKey("gitops.environments", f.Clusters[cluster].Environment) + ".engine"
	}
	return "gitops.engine"
}

// gitURL reports whether s is a repository URL Argo CD clones.
func gitURL(s string) bool {
	if strings.HasPrefix(s, "git@") && strings.Contains(s, ":") {
		return true
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
		return u.Host != "" && u.Path != "" && u.Path != "/"
	case "file":
		return u.Path != ""
	}
	return false
}
