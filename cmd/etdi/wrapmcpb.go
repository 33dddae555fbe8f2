package main

import (
	"path/filepath"

	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/mcpb"
)

// reportExtensions says, for each MCPB extension installed beside a Claude
// Desktop configuration file wrap read, that it is not wrapped and why
// (mcpb.NotWrappedReason): nothing of it is read but its manifest, and
// nothing is written (docs/registry.md#mcpb-files).
func (e *env) reportExtensions(files []configFile, name string) {
	seen := map[string]bool{}
	for _, cf := range files {
		if cf.host != hostconfig.ClaudeDesktop && filepath.Base(cf.path) != "claude_desktop_config.json" {
			continue
		}
		dir := filepath.Dir(cf.path)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		exts, err := mcpb.Installed(dir)
		if err != nil {
			say(e.stderr, "etdi: warning: Claude Desktop extensions in %s: %v\n", dir, err)
			continue
		}
		for _, x := range exts {
			if name != "" && name != x.ID {
				continue
			}
			what := x.ID
			if x.Manifest != nil {
				what += " (MCPB " + x.Manifest.Name + " " + x.Manifest.Version + ")"
			}
			say(e.stdout, "%s: Claude Desktop extension %s: not wrapped: %s\n", x.Dir, what, mcpb.NotWrappedReason)
		}
	}
}
