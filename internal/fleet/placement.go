package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Placement of the serving stack: which clusters of its environment each
// service runs on.
//
// A service runs on a cluster only when one of the cluster's pools can give
// it what it asks for: a Kustomization with wait = true whose pods can never
// schedule never becomes Ready, and then the cluster's gate never passes.
// A service that asks for no GPU runs on every cluster of its environment.
// An environment's setting may list its clusters itself (clusters = [...]);
// each listed cluster must fit too.

// Fits reports whether cluster c has a pool that gives setting s what it
// asks for: its GPU product, its MIG slice (a pool partitioned into that
// profile, or all-balanced), whole GPUs (a pool without MIG). A setting
// that asks for no GPU fits every cluster.
func Fits(c *Cluster, s *ServiceSetting) bool {
	if !s.UsesGPU() {
		return true
	}
	return slices.ContainsFunc(c.Pools, func(p *Pool) bool { return poolFits(p, s) })
}

func poolFits(p *Pool, s *ServiceSetting) bool {
	if s.GPUProduct != "" && p.Product != s.GPUProduct {
		return false
	}
	whole := p.MIG == "" || p.MIG == "all-disabled"
	if s.MIG != "" {
		return p.MIG == "all-"+s.MIG || p.MIG == "all-balanced"
	}
	return whole
}

// ServiceClusters returns the clusters, sorted, that service runs on in
// env: those its setting lists, else every cluster of env that fits it.
func (f *Fleet) ServiceClusters(service, env string) []string {
	if f.Stack == nil || f.Stack.Services[service] == nil {
		return nil
	}
	s := f.Stack.Services[service].Environments[env]
	var out []string
	for _, name := range f.ClusterNames() {
		c := f.Clusters[name]
		if c.Environment != env {
			continue
		}
		if s != nil && len(s.Clusters) > 0 {
			if slices.Contains(s.Clusters, name) {
				out = append(out, name)
			}
			continue
		}
		if Fits(c, s) {
			out = append(out, name)
		}
	}
	return out
}

// ServicesOn returns the services that run on cluster, in dependency order
// (see Stack.ServiceNames).
func (f *Fleet) ServicesOn(cluster string) []string {
	c := f.Clusters[cluster]
	if f.Stack == nil || c == nil {
		return nil
	}
	var out []string
	for _, name := range f.Stack.ServiceNames() {
		// What ServiceClusters(name, c.Environment) would say of this
		// cluster alone: render asks for every cluster, and listing the
		// whole environment each time grew with the square of the fleet.
		s := f.Stack.Services[name].Environments[c.Environment]
		if s != nil && len(s.Clusters) > 0 {
			if slices.Contains(s.Clusters, cluster) {
				out = append(out, name)
			}
		} else if Fits(c, s) {
			out = append(out, name)
		}
	}
	return out
}

// validatePlacement checks that every service runs on at least one cluster
// of each environment, and that the clusters a setting lists exist, are of
// its environment and fit it.
func (f *Fleet) validatePlacement(probs *problemList) {
	for _, name := range slices.Sorted(maps.Keys(f.Stack.Services)) {
		svc := f.Stack.Services[name]
		for _, env := range f.Environments() {
			key := joinKey(joinKey("stack.services", name)+".environments", env)
			if reported(probs, key) {
				continue // the setting is wrong already; say that first
			}
			s := svc.Environments[env]
			if s != nil && len(s.Clusters) > 0 {
				for i, c := range s.Clusters {
					ckey := fmt.Sprintf("%s.clusters[%d]", key, i)
					switch cl := f.Clusters[c]; {
					case cl == nil:
						probs.add(ckey, "unknown cluster %q%s", c, suggest(c, f.clustersOf(env)))
					case cl.Environment != env:
						probs.add(ckey, "cluster %s is in environment %q, not %q", c, cl.Environment, env)
					case !Fits(cl, s):
						probs.add(ckey, "cluster %s cannot run %s: it asks for %s, and the cluster's pools are %s", c, name, asks(s), describePools(cl))
					}
				}
				continue
			}
			if len(f.ServiceClusters(name, env)) == 0 {
				var pools []string
				for _, c := range f.clustersOf(env) {
					pools = append(pools, c+" ("+describePools(f.Clusters[c])+")")
				}
				probs.add(key, "no cluster of environment %q can run %s: it asks for %s, on one pool; clusters: %s", env, name, asks(s), strings.Join(pools, "; "))
			}
		}
	}
}

// reported says whether a problem is recorded at key or below it.
func reported(probs *problemList, key string) bool {
	return slices.ContainsFunc(probs.list, func(p Problem) bool {
		return p.Key == key || strings.HasPrefix(p.Key, key+".")
	})
}

func (f *Fleet) clustersOf(env string) []string {
	var out []string
	for _, c := range f.ClusterNames() {
		if f.Clusters[c].Environment == env {
			out = append(out, c)
		}
	}
	return out
}

// asks describes what a setting asks of a pool, e.g. "GPU NVIDIA-H200,
// whole GPUs".
func asks(s *ServiceSetting) string {
	var parts []string
	if s.GPUProduct != "" {
		parts = append(parts, "GPU "+s.GPUProduct)
	}
	if s.MIG != "" {
		parts = append(parts, "MIG slice "+s.MIG)
	} else {
		parts = append(parts, "whole GPUs (a pool without MIG)")
	}
	return strings.Join(parts, ", ")
}

func describePools(c *Cluster) string {
	var out []string
	for _, p := range c.Pools {
		d := p.Name + ": " + p.Product
		if p.MIG != "" {
			d += " " + p.MIG
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
