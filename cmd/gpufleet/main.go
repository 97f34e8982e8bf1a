// Command gpufleet renders, validates and promotes GPU software releases
// across a fleet of Kubernetes clusters managed by Flux. See README.md.
package main

import (
	"os"

	"github.com/gpufleet/gpufleet/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
