package adopt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// WaveSpec is one wave as the command line gives it (--wave NAME=CTX,CTX):
// its name and its contexts in order.
type WaveSpec struct {
	Name     string
	Contexts []string
}

// DefaultWaves are the waves when none are given: one per environment,
// staging-like environments first (a word of staging, stage, stg, dev,
// test, qa), production-like ones (prod, production, prd) last, the rest
// between, each group by name; each wave's clusters by name. A wave is
// named after its environment, or <environment>-wave where a cluster has
// that name (approvals name waves and clusters alike, so they must differ).
func DefaultWaves(clusters []*FleetCluster) []WaveSpec {
	byEnv := map[string][]string{}
	taken := map[string]bool{}
	for _, c := range clusters {
		byEnv[c.Environment] = append(byEnv[c.Environment], c.Context)
		taken[c.Name] = true
	}
	envs := slices.Sorted(maps.Keys(byEnv))
	rank := func(env string) int {
		for _, w := range words(env) {
			if stagingWords[w] {
				return 0
			}
		}
		for _, w := range words(env) {
			if prodWords[w] {
				return 2
			}
		}
		return 1
	}
	slices.SortStableFunc(envs, func(a, b string) int { return rank(a) - rank(b) })
	var specs []WaveSpec
	for _, env := range envs {
		name := env
		if taken[name] {
			name += "-wave"
		}
		specs = append(specs, WaveSpec{Name: name, Contexts: slices.Sorted(slices.Values(byEnv[env]))})
	}
	return specs
}

// gatedWaves adds the conservative gates to waves, by one rule whether the
// waves were given or defaulted: every wave but the first is entered only
// once approved (on the first, `gpufleet start` is the approval), and a
// wave of two or more clusters gives the release to its first cluster
// alone (its canary) and pauses after it for approval.
func gatedWaves(specs []WaveSpec) []Wave {
	waves := make([]Wave, len(specs))
	for i, s := range specs {
		w := Wave{Name: s.Name, Clusters: slices.Clone(s.Contexts), RequireApproval: i > 0}
		if len(s.Contexts) > 1 {
			w.Canary, w.PauseAfterCanary = s.Contexts[0], true
		}
		waves[i] = w
	}
	return waves
}

// CheckOptions checks what the command line says of contexts against the
// contexts init reads, before it reads them: environments and waves name
// only those contexts, names are valid, and given waves hold every
// context exactly once and are not named as a cluster is.
func CheckOptions(contexts []string, o Options) error {
	var errs []error
	known := map[string]bool{}
	for _, c := range contexts {
		known[c] = true
	}
	unknown := func(flag, ctx string) error {
		return fmt.Errorf("%s names context %q, which init does not read (it reads %s)", flag, ctx, strings.Join(contexts, ", "))
	}
	if o.Release != "" && !ValidName(o.Release) {
		errs = append(errs, fmt.Errorf("--release %q is not a valid release name: at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", o.Release, maxName))
	}
	for _, ctx := range slices.Sorted(maps.Keys(o.Environments)) {
		if !known[ctx] {
			errs = append(errs, unknown("--environment", ctx))
		}
		if env := o.Environments[ctx]; !ValidName(env) {
			errs = append(errs, fmt.Errorf("--environment %s=%s: %q is not a valid environment name (lower-case letters, digits and '-')", ctx, env, env))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(o.Values)) {
		if ctx := key[:max(strings.LastIndex(key, "/"), 0)]; !known[ctx] {
			errs = append(errs, unknown("--values", ctx))
		}
	}
	if len(o.Waves) == 0 {
		return errors.Join(errs...)
	}
	inWave := map[string]string{}
	names := map[string]bool{}
	for _, w := range o.Waves {
		switch {
		case !ValidName(w.Name):
			errs = append(errs, fmt.Errorf("--wave %s: %q is not a valid wave name (lower-case letters, digits and '-')", w.Name, w.Name))
		case names[w.Name]:
			errs = append(errs, fmt.Errorf("--wave %s is given twice", w.Name))
		case known[w.Name]:
			errs = append(errs, fmt.Errorf("--wave %s has the name of a cluster: approvals name waves and clusters alike (RELEASE/NAME), so name the wave otherwise", w.Name))
		}
		names[w.Name] = true
		if len(w.Contexts) == 0 {
			errs = append(errs, fmt.Errorf("--wave %s lists no contexts", w.Name))
		}
		for _, ctx := range w.Contexts {
			switch {
			case !known[ctx]:
				errs = append(errs, unknown("--wave "+w.Name, ctx))
			case inWave[ctx] != "":
				errs = append(errs, fmt.Errorf("context %q is in two waves: %s and %s", ctx, inWave[ctx], w.Name))
			default:
				inWave[ctx] = w.Name
			}
		}
	}
	for _, ctx := range contexts {
		if inWave[ctx] == "" {
			errs = append(errs, fmt.Errorf("context %q is in no --wave: with --wave, every context read is in exactly one", ctx))
		}
	}
	return errors.Join(errs...)
}
