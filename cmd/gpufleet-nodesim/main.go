// Command gpufleet-nodesim simulates GPU nodes on a Kubernetes API server
// that has no kubelets or GPUs behind it, for demos: it creates the nodes of
// each pool, keeps them Ready, finishes pod deletions and plays the GPU
// driver DaemonSet. See package nodesim.
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
