// Command gpufleet-lab plays gpufleet's story on a local testbed
// ("gpufleet-lab demo"). It carries the testbed, which the gpufleet CLI
// does not. See README.md.
package main

import (
	"os"

	"github.com/gpufleet/gpufleet/internal/testworld/lab"
)

func main() {
	os.Exit(lab.Main(os.Args[1:], os.Stdout, os.Stderr))
}
