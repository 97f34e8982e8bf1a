package render

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// ClusterStacks renders what each named cluster runs of the GPU stack: per
// cluster, the files of its three steps (operators, config, lifecycle) and
// of the GitOps objects that apply them, by path. These are what a
// promotion moves; the serving stack's files (its Kustomizations, and the
// folder's kustomization.yaml that lists them beside the steps) are left
// out, since the stack is promoted by its own image automation.
//
// `gpufleet verify` compares them between the base and a change to find a
// change of what a cluster runs that no promotion step explains.
func ClusterStacks(f *fleet.Fleet, names []string, opts Options) (map[string]map[string][]byte, error) {
	out, err := RenderClusters(f, names, opts)
	if err != nil {
		return nil, err
	}
	stacks := make(map[string]map[string][]byte, len(names))
	for _, name := range names {
		stacks[name] = map[string][]byte{}
	}
	for p, b := range out.Files {
		rest, ok := strings.CutPrefix(p, "clusters/")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		if s, ok := stacks[name]; ok {
			s[p] = b
		}
	}
	for _, name := range names {
		c := f.Clusters[name]
		if c == nil {
			return nil, fmt.Errorf("no cluster %q", name)
		}
		plan := planFor(f, c)
		for _, file := range plan.engine().stackFiles(plan) {
			delete(stacks[name], path.Join(ClusterDir(name), file))
		}
	}
	return stacks, nil
}
