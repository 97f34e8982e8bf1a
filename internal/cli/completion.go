package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// Shell completion (cobra's `gpufleet completion bash|zsh|fish|powershell`)
// reads the fleet file the command line names (-f, default fleet.toml), so
// it offers the names that file has, and for approve exactly the approval
// names that wait now. A fleet file that cannot be read offers nothing
// (never a guess), and completion never touches a cluster.

// completionFleet loads the fleet file named on the command line being
// completed, or nil.
func completionFleet(cmd *cobra.Command) *fleet.Fleet {
	path := "fleet.toml"
	if fl := cmd.Flags().Lookup("file"); fl != nil && fl.Value.String() != "" {
		path = fl.Value.String()
	}
	f, err := fleet.Load(path)
	if err != nil {
		return nil
	}
	return f
}

// completeFirst offers names for the command's first argument only.
func completeFirst(names func(*fleet.Fleet) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		f := completionFleet(cmd)
		if f == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, n := range names(f) {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

var (
	completeClusters  = completeFirst(func(f *fleet.Fleet) []string { return f.ClusterNames() })
	completeReleases  = completeFirst(func(f *fleet.Fleet) []string { return f.ReleaseNames() })
	completeApprovals = completeFirst(waitingApprovals)
)

// completeWaves completes a --wave flag.
func completeWaves(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	f := completionFleet(cmd)
	if f == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, w := range f.Waves {
		if strings.HasPrefix(w.Name, toComplete) {
			out = append(out, w.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeClusterFlag completes a --cluster flag.
func completeClusterFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeClusters(cmd, nil, toComplete)
}

// completeReleaseFlag completes a --release flag.
func completeReleaseFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeReleases(cmd, nil, toComplete)
}

// completePlan completes `plan COMMAND [ARG]`: the commands, then the
// argument each takes (a release for start, a waiting name for approve).
func completePlan(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0:
		var out []cobra.Completion
		for _, c := range []string{"start", "promote", "approve", "pause", "resume", "abort"} {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	case len(args) == 1 && args[0] == "start":
		return completeReleases(cmd, nil, toComplete)
	case len(args) == 1 && args[0] == "approve":
		return completeApprovals(cmd, nil, toComplete)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// waitingApprovals are the approval names the rollout waits for now, the
// only names approve accepts.
func waitingApprovals(f *fleet.Fleet) []string {
	var out []string
	for _, w := range promote.Waits(f) {
		if w.Approval != "" {
			out = append(out, w.Approval)
		}
	}
	return out
}
