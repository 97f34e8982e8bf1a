package demo

import (
	"context"
	"time"

	"github.com/gpufleet/gpufleet/internal/lab"
	"github.com/gpufleet/gpufleet/internal/nodesim"
)

// The demo fleet (fleet.toml).
const (
	stg  = "stg"
	prod = "prod"

	// waveProduction is the wave prod is in (a wave may not share a
	// cluster's name: approvals name either).
	waveProduction = "production"

	relGood  = "r2026-10"
	relDrill = "r2026-10-drill"

	drvStable = "570.172.08"
	drvGood   = "580.95.05"
	drvDrill  = "580.82.07"

	chartVersion = "v25.3.4"
	product      = "NVIDIA-H100-80GB-HBM3"
	poolName     = "h100"
	poolNodes    = 3

	// waitFor bounds each wait of the story (Flux applying a revision, a
	// rollout reaching a phase, the nodes reaching a driver).
	waitFor = 3 * time.Minute
)

var clusterNames = []string{stg, prod}

// start starts the story's world (package lab): the testbed with the
// controller-manager, scheduler and kwok, per cluster a node agent, the
// real GPU Operator once Flux has applied its chart and a lifecycle
// controller, and the fleet repository holding fleet.toml.
func start(ctx context.Context, o Options) (*lab.World, error) {
	return lab.Start(ctx, lab.Options{
		Root: o.Root, Dir: o.Dir, Clusters: clusterNames, FleetTOML: fleetTOML, ChartVersion: chartVersion,
		Pool:       nodesim.Pool{Name: poolName, Product: product, Nodes: poolNodes, Driver: drvStable},
		BadDrivers: []string{drvDrill}, GitUser: "demo",
	})
}
