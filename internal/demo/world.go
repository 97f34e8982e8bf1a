package demo

import (
	"context"
	"time"

	"github.com/gpufleet/gpufleet/internal/lab"
	"github.com/gpufleet/gpufleet/internal/nodesim"
)

// The story fleet's names (package lab's fleet.toml), as the demo's steps
// use them.
const (
	stg  = lab.Staging
	prod = lab.Prod

	waveProduction = lab.WaveProduction

	relGood  = lab.ReleaseGood
	relDrill = lab.ReleaseDrill

	drvStable = lab.DriverStable
	drvGood   = lab.DriverGood
	drvDrill  = lab.DriverDrill

	product   = lab.Product
	poolNodes = lab.PoolNodes

	// waitFor bounds each wait of the story (Flux applying a revision, a
	// rollout reaching a phase, the nodes reaching a driver).
	waitFor = 3 * time.Minute
)

var clusterNames = []string{stg, prod}

// start starts the story's world (package lab): the testbed with the
// controller-manager, scheduler and kwok, per cluster a node agent, the
// real GPU Operator once Flux has applied its chart and a lifecycle
// controller, and the fleet repository holding the story's fleet file.
func start(ctx context.Context, o Options) (*lab.World, error) {
	return lab.Start(ctx, lab.Options{
		Root: o.Root, Dir: o.Dir, Clusters: clusterNames, FleetTOML: lab.StoryFleet(), ChartVersion: lab.ChartVersion,
		Pool:       nodesim.Pool{Name: lab.PoolName, Product: product, Nodes: poolNodes, Driver: drvStable},
		BadDrivers: []string{drvDrill}, GitUser: "demo",
	})
}
