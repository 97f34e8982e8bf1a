package lab

import (
	_ "embed"
	"slices"
	"time"
)

// storyFleet is the story's fleet file (fleet.toml): the one fixture the
// demo plays and the end-to-end suite checks.
//
//go:embed fleet.toml
var storyFleet []byte

// StoryFleet returns the story's fleet file, naming [PlaceholderCharts] as
// its chart repository.
func StoryFleet() []byte { return slices.Clone(storyFleet) }

// The story's fleet (fleet.toml): its clusters, waves, releases, drivers
// and the one pool of simulated GPU nodes each cluster has.
const (
	Staging = "stg"
	Prod    = "prod"

	// WaveStaging and WaveProduction are the waves of Staging and Prod (a
	// wave may not share a cluster's name: approvals name either).
	WaveStaging    = "staging"
	WaveProduction = "production"

	ReleaseStable = "r2026-06"
	ReleaseGood   = "r2026-10"
	ReleaseDrill  = "r2026-10-drill"
	// ReleaseController changes gpufleet-controller alone: from
	// ControllerStable to ControllerNext, on DriverGood.
	ReleaseController = "r2026-12"

	// ControllerImage is the [controller] image; ControllerStable the
	// version of every release but ReleaseController's, ControllerNext.
	ControllerImage  = "lab.invalid/gpufleet/gpufleet-controller"
	ControllerStable = "v0.9.0"
	ControllerNext   = "v0.10.0"

	DriverStable = "570.172.08"
	DriverGood   = "580.95.05"
	// DriverDrill is the drill's driver, whose install the node agent
	// fails ([Options.BadDrivers]).
	DriverDrill = "580.82.07"

	// ChartVersion is the GPU Operator chart of every release: the real
	// operator built for the testbed is this version.
	ChartVersion = "v25.3.4"

	Product   = "NVIDIA-H100-80GB-HBM3"
	PoolName  = "h100"
	PoolNodes = 3

	// SourceInterval is how often source-controller polls the fleet
	// repository in the story; RootInterval is the interval of each
	// cluster's root Kustomization (the one "flux bootstrap" would
	// create), which applies the rendered flux-*.yaml and repairs drift of
	// them.
	SourceInterval = 2 * time.Second
	RootInterval   = 10 * time.Second
)

// StoryClusters are the story's clusters, in wave order.
func StoryClusters() []string { return []string{Staging, Prod} }
