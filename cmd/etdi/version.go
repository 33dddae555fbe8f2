package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildInfo is what `etdi version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
}

// readBuildInfo returns etdi's version: the -X main.version value when a
// release build sets it, else the module version a `go install
// module@version` build records, else "dev". The commit comes from the
// VCS stamp of a build inside a checkout.
func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoFrom(version, bi)
}

func buildInfoFrom(linked string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: linked, GoVersion: runtime.Version()}
	if bi == nil {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form: "etdi v1.2.3 (commit 0123abcd, go1.26.8)".
func (b buildInfo) String() string {
	var extra []string
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += "-dirty"
		}
		extra = append(extra, "commit "+c)
	}
	extra = append(extra, b.GoVersion)
	return fmt.Sprintf("etdi %s (%s)", b.Version, strings.Join(extra, ", "))
}

func (e *env) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print etdi's version, commit and Go version",
		Long: `Print the version of this etdi binary, the commit it was built from and
the Go version that built it. A release build carries its version; a build
made with "go install github.com/etdi-dev/etdi/cmd/etdi@VERSION" reports
the module version; a build from a checkout reports "dev" and the commit.
The same version is reported as driver.version in SARIF output.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := readBuildInfo()
			if asJSON {
				return e.writeJSON(b)
			}
			_, err := fmt.Fprintln(e.stdout, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
