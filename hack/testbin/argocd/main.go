// Command argocd is the part of Argo CD the testbed runs: the
// application-controller and the repo-server, out of cluster (see
// hack/testbin.sh and internal/testworld/testbed/argocd.go).
//
// Why not argo-cd's own cmd: it links every Argo CD program (the API server,
// the CLI, Dex, notifications, the ApplicationSet controller) and takes twice
// as long to compile. This main dispatches the same way (ARGOCD_BINARY_NAME,
// or the name it is run as), over only the two command packages the testbed
// starts.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

// Unlike argo-cd's cmd, main does not call grpc.DisableSRVLookups: that
// turns off the gRPC DNS SRV lookups which a package of the cloud SDKs that
// cmd links (grpclb) turns on, and panics when it finds them off, as they
// are in this build, which does not link that package.
func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case common.CommandApplicationController:
		command = appcontroller.NewCommand()
	case common.CommandRepoServer:
		command = reposerver.NewCommand()
	default:
		fmt.Fprintf(os.Stderr, "argocd (testbed build): ARGOCD_BINARY_NAME must be %s or %s, not %q\n",
			common.CommandApplicationController, common.CommandRepoServer, name)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
