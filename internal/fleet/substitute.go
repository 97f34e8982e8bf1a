package fleet

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// WithPartsOf is a copy of f, sharing the rest, in which the clusters named
// in pools have the pools they have in from, and those named in policies
// the policy from resolves for them. A cluster from lacks keeps its own.
// It lets a reader judge one part of a change alone: `gpufleet verify`
// asks whether what a cluster renders changed by its pools or its policy
// and nothing else.
func (f *Fleet) WithPartsOf(from *Fleet, pools, policies []string) *Fleet {
	g := *f
	g.Clusters = maps.Clone(f.Clusters)
	for _, name := range pools {
		c, o := f.Clusters[name], from.Clusters[name]
		if c == nil || o == nil {
			continue
		}
		cc := *c
		cc.Pools = o.Pools
		g.Clusters[name] = &cc
	}
	if len(policies) > 0 {
		g.policies = maps.Clone(f.policies)
		for _, name := range policies {
			if p, ok := from.policies[name]; ok && f.Clusters[name] != nil {
				g.policies[name] = p
			}
		}
	}
	return &g
}

// WithContextsOf is a copy of f, sharing the rest, in which every cluster
// from has too is reached through from's kubeconfig context: the gate of a
// change reaches the clusters as the base says, never as the change does.
func (f *Fleet) WithContextsOf(from *Fleet) *Fleet {
	g := *f
	g.Clusters = maps.Clone(f.Clusters)
	for name, c := range f.Clusters {
		if o := from.Clusters[name]; o != nil && o.Context != c.Context {
			cc := *c
			cc.Context = o.Context
			g.Clusters[name] = &cc
		}
	}
	return &g
}

// PolicyChange is one setting of a cluster's policy that differs between
// two versions of a fleet file.
type PolicyChange struct {
	// Field is the setting as the fleet file spells it ("max-unavailable").
	Field string
	// Key is the most specific table of the newer file that sets it
	// ("policy.environments.prod.max-unavailable"), or the table that
	// would ("policy") when it no longer does.
	Key      string
	Was, Now string
}

// PolicyChanges lists the settings of cluster's policy that differ between
// a and b, in the order the fleet file documents them; nil when the
// cluster's policy is the same (or either fleet lacks it).
func PolicyChanges(a, b *Fleet, cluster string) []PolicyChange {
	if a.Clusters[cluster] == nil || b.Clusters[cluster] == nil {
		return nil
	}
	pa, pb := reflect.ValueOf(a.PolicyFor(cluster)), reflect.ValueOf(b.PolicyFor(cluster))
	settings := reflect.TypeFor[rawPolicySettings]()
	var out []PolicyChange
	for i := range pa.NumField() {
		name := pa.Type().Field(i).Name
		va, vb := pa.Field(i).Interface(), pb.Field(i).Interface()
		if reflect.DeepEqual(va, vb) {
			continue
		}
		field := name
		if sf, ok := settings.FieldByName(name); ok {
			field = sf.Tag.Get("toml")
		}
		out = append(out, PolicyChange{Field: field, Key: b.PolicyKey(cluster, field), Was: policyValue(va), Now: policyValue(vb)})
	}
	return out
}

// policyValue formats a policy setting for a message.
func policyValue(v any) string {
	switch x := v.(type) {
	case fmt.Stringer:
		if reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
			return "unset"
		}
		return x.String()
	case []Window, []Freeze:
		if reflect.ValueOf(v).Len() == 0 {
			return "none"
		}
	}
	return fmt.Sprintf("%v", v)
}

// WavesEqual reports whether a and b have the same waves: names, order,
// clusters, canary clusters and what each asks before it is entered.
func WavesEqual(a, b *Fleet) bool {
	return slices.EqualFunc(a.Waves, b.Waves, func(x, y *Wave) bool { return reflect.DeepEqual(*x, *y) })
}
