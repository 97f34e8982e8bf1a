package cli

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// BuildVersion is the version the binary was released as, set by the
// main package from its -ldflags "-X main.version=…"; empty for a plain
// `go build`, when the module version of the build info is used.
var BuildVersion string

// VersionInfo is what `gpufleet version` prints.
type VersionInfo struct {
	// Version is the release (BuildVersion), else the module version Go
	// recorded ("(devel)" for a build from a working tree).
	Version string `json:"version"`
	// Commit, CommitTime and Modified are the VCS state Go recorded.
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
	// OperatorFields are the NVIDIADriver fields this build writes only
	// from a GPU Operator version on: what it knows of operator versions
	// (older ones get an NVIDIADriver without them; validate checks each
	// release against its own chart's CRDs).
	OperatorFields []render.OperatorField `json:"operatorFields"`
	// Releases are the operator versions of each release the fleet file
	// names (when one is read): what this build renders and validates.
	Releases []ReleaseVersions `json:"releases,omitempty"`
}

// ReleaseVersions are the versions one release of the fleet file holds.
type ReleaseVersions struct {
	Release     string `json:"release"`
	GPUOperator string `json:"gpuOperator"`
	// NetworkOperator is empty when the release runs none (network-operator
	// = "none", or left out).
	NetworkOperator string `json:"networkOperator"`
	Driver          string `json:"driver"`
}

// buildVersion reads the build info Go embeds in the binary.
func buildVersion() VersionInfo {
	v := VersionInfo{Version: BuildVersion, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		OperatorFields: render.NVIDIADriverFieldsByVersion()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

// shortVersion is the one line --version prints.
func (v VersionInfo) shortVersion() string {
	s := v.Version
	if v.Commit != "" {
		s += " (commit " + v.Commit[:min(12, len(v.Commit))]
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + ", " + v.GoVersion + " " + v.Platform
}

type versionOptions struct {
	fleetFile, output string
}

func newVersionCommand(s Streams) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print gpufleet's version, commit, Go version, and the operator versions of the fleet file's releases",
		Long: `version prints the release gpufleet was built as (or the module version Go
recorded), the commit and whether the tree had changes, the Go version and the
platform. With a readable fleet file (-f, default fleet.toml; none is fine) it
also lists the GPU Operator, Network Operator and driver versions of each of
its releases: the versions render and validate work with.

gpufleet --version prints the first line only.`,
		Example: `  gpufleet version
  gpufleet version -o json
  gpufleet --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(o.output, formatText, formatJSON, formatYAML); err != nil {
				return err
			}
			v := buildVersion()
			// The fleet file is optional here: version must work anywhere.
			if f, err := fleet.Load(o.fleetFile); err == nil {
				for _, name := range f.ReleaseNames() {
					r := f.Releases[name]
					rv := ReleaseVersions{Release: name, GPUOperator: r.GPUOperator, Driver: r.Driver}
					if r.RunsNetworkOperator() {
						rv.NetworkOperator = r.NetworkOperator
					}
					v.Releases = append(v.Releases, rv)
				}
			}
			if machineFormat(o.output) {
				return writeDocument(s.Out, o.output, v)
			}
			return printVersion(s.Out, v)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file whose releases to list (optional)")
	cmd.Flags().StringVarP(&o.output, "output", "o", formatText, "text, json or yaml")
	return cmd
}

// printVersion writes v as `gpufleet version` prints it.
func printVersion(w io.Writer, v VersionInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gpufleet %s\n", v.Version)
	if v.Commit != "" {
		fmt.Fprintf(&b, "commit:   %s", v.Commit)
		if v.Modified {
			b.WriteString(" (modified)")
		}
		b.WriteByte('\n')
	}
	if v.CommitTime != "" {
		fmt.Fprintf(&b, "commit time: %s\n", v.CommitTime)
	}
	fmt.Fprintf(&b, "go:       %s %s\n", v.GoVersion, v.Platform)
	if len(v.OperatorFields) > 0 {
		var fs []string
		for _, f := range v.OperatorFields {
			fs = append(fs, f.Field+" from "+f.Since)
		}
		fmt.Fprintf(&b, "GPU Operator: NVIDIADriver %s\n", strings.Join(fs, ", "))
	}
	if len(v.Releases) > 0 {
		b.WriteString("\nreleases of the fleet file:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RELEASE\tGPU OPERATOR\tNETWORK OPERATOR\tDRIVER")
		for _, r := range v.Releases {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Release, r.GPUOperator, cmp.Or(r.NetworkOperator, "none"), r.Driver)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}
