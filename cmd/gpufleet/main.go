// Command gpufleet renders, validates and promotes GPU software releases
// across a fleet of Kubernetes clusters managed by Flux. See README.md.
package main

import (
	"os"

	"github.com/gpufleet/gpufleet/internal/cli"
)

// version is the release this binary is built as, set at link time:
//
//	go build -ldflags "-X main.version=v1.2.0" ./cmd/gpufleet
//
// Left empty, `gpufleet version` reports the module version and commit Go
// records in the binary (runtime/debug.ReadBuildInfo).
var version string

func main() {
	cli.BuildVersion = version
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
