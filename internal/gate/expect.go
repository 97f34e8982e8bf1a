package gate

import (
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Expected is what a cluster should run according to the fleet file.
type Expected struct {
	Cluster string
	Release *fleet.Release
	// Revision is the git commit Flux should have applied.
	Revision string
	// Kustomizations are the Flux Kustomizations (flux-system) that must be Ready.
	Kustomizations []string
	// HelmReleases maps namespace/name to the expected chart version.
	HelmReleases map[string]string
	// NVIDIADrivers are the NVIDIADriver objects of the release.
	NVIDIADrivers []string
	Pools         []*fleet.Pool
	// SharedProduct marks pools whose nodes are told apart by their pool label.
	SharedProduct map[string]bool
	// SignalConditions are node conditions that mean a GPU error when True.
	SignalConditions []string
	// MaxQuarantined is how many quarantined nodes the policy tolerates.
	MaxQuarantined int
	// Rollout is the DriverRollout that must be complete.
	Rollout string
}

// Expect derives what cluster should run from the fleet file.
func Expect(f *fleet.Fleet, cluster, revision string) Expected {
	c := f.Clusters[cluster]
	rel := f.ReleaseFor(cluster)
	pol := f.PolicyFor(cluster)
	e := Expected{
		Cluster:          cluster,
		Release:          rel,
		Revision:         revision,
		Kustomizations:   []string{"operators", "config", "lifecycle"},
		HelmReleases:     map[string]string{render.GPUOperatorNamespace + "/gpu-operator": rel.GPUOperator, render.NetworkOperatorNamespace + "/network-operator": rel.NetworkOperator},
		Pools:            c.Pools,
		SharedProduct:    map[string]bool{},
		SignalConditions: pol.Health.NodeConditions,
		MaxQuarantined:   pol.FailureBudget,
		Rollout:          rel.Name,
	}
	if f.Stack != nil {
		e.Kustomizations = append(e.Kustomizations, "infra-controllers", "infra-configs")
		for _, s := range f.Stack.ServiceNames() {
			e.Kustomizations = append(e.Kustomizations, render.AppKustomization(s))
		}
	}
	products := map[string]int{}
	for _, p := range c.Pools {
		products[p.Product]++
		e.NVIDIADrivers = append(e.NVIDIADrivers, render.NVIDIADriverName(p.Name, rel.Driver))
	}
	for _, p := range c.Pools {
		e.SharedProduct[p.Name] = products[p.Product] > 1
	}
	return e
}
