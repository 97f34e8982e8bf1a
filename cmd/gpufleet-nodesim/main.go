// Command gpufleet-nodesim simulates GPU nodes on a Kubernetes cluster
// that has no GPUs behind it, for demos: it registers the nodes of each pool
// for kwok (which must run as their kubelet) with the labels NFD and GFD
// would set, and plays the driver install inside the GPU Operator's driver
// pods on them. See package nodesim.
//
//	gpufleet-nodesim --kubeconfig FILE [--context C] \
//	  --pool name=h100,product=NVIDIA-H100-80GB-HBM3,nodes=4,driver=570.172.08 \
//	  [--bad-driver V] [--install-time 3s]
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
