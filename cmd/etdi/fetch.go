package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
)

func (e *env) fetchCmd() *cobra.Command {
	var sf serverFlags
	var out string
	cmd := &cobra.Command{
		Use:   "fetch (--server -- CMD... | --url URL | --config FILE|auto --name ENTRY) [--out FILE]",
		Short: "Save a live server's tools/list to a file, to verify or check offline",
		Long: `Connect to a live server, follow tools/list to its last page and write every
tool as one tools/list result ({"tools": [...]}), the file that --tools takes
(verify, check, pin approve, diff, digest, manifest init). Each tool is
written in its canonical form (RFC 8785), which has the same digest as the
definition the server sent. An in-band bundle the server carries is kept
under _meta["dev.etdi/bundle"], so checking the file finds it. When the
server offers prompts or resources, its prompts, resources and resource
templates are written beside the tools ("prompts", "resources",
"resourceTemplates"), so checking the file pins them too.

Nothing is verified or approved here: fetch only records what the server
serves. With --config, --name picks the entry when the file has several.`,
		Example: `  etdi fetch --out live.json --server -- npx -y @modelcontextprotocol/server-everything
  etdi fetch --url https://mcp.example.com/mcp --out live.json
  etdi verify --trust trust.json --tools live.json weather.etdi.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := e.targets(&sf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			if len(ts) != 1 {
				return usagef("--config has %d servers; pick one with --name", len(ts))
			}
			t := ts[0]
			if len(t.problems) > 0 {
				return fmt.Errorf("server %s cannot be started as configured: %s", t.label, t.problems[0])
			}
			l, err := e.fetch(&sf, &t)
			if err != nil {
				return err
			}
			if fs := guard.CredentialFindings(l, t.credentials); len(fs) > 0 { // never saved (SPEC.md §21)
				printFindings(e.stderr, fs)
				return &exitCodeError{exitFor(fs)}
			}
			// Write what was fetched only if every tool reads back with the
			// digest of what the server served: the file must say exactly
			// that. One tool at a time, so checking costs no second copy of
			// the listing.
			for _, list := range [][]etdi.LiveTool{l.Tools, l.Prompts, l.Resources, l.Templates} {
				for _, tool := range list {
					v, err := etdi.ParseJSON(tool.Canonical)
					if err != nil || etdi.DefinitionDigest(v) != tool.Digest {
						return fmt.Errorf("server %s: %q does not read back with its digest (%v)", t.label, tool.Name, err)
					}
				}
			}
			inband, err := etdi.InbandBundle(append(append([]*etdi.Value{}, l.Metas...), l.ToolMetas...))
			if err != nil {
				return fmt.Errorf("server %s: in-band bundle: %w", t.label, err)
			}
			// The listing is written as it is, tool by tool: no second copy.
			write := func(w io.Writer) error {
				bw := bufio.NewWriter(w)
				list := func(member string, entries []etdi.LiveTool) {
					fmt.Fprintf(bw, "%q: [", member)
					for i, tool := range entries {
						if i > 0 {
							bw.WriteByte(',')
						}
						bw.WriteString("\n  ")
						bw.Write(tool.Canonical)
					}
					bw.WriteString("\n]")
				}
				bw.WriteString("{")
				list("tools", l.Tools)
				lists := map[string][]etdi.LiveTool{pin.ItemPrompt: l.Prompts, pin.ItemResource: l.Resources, pin.ItemTemplate: l.Templates}
				members := map[string]string{pin.ItemPrompt: "prompts", pin.ItemResource: "resources", pin.ItemTemplate: "resourceTemplates"}
				for _, item := range l.Listed {
					bw.WriteString(",\n")
					list(members[item], lists[item])
				}
				if inband != nil {
					fmt.Fprintf(bw, ",\n\"_meta\": {%q: %s}", etdi.MetaBundleKey, inband)
				}
				bw.WriteString("}\n")
				return bw.Flush()
			}
			if out == "" || out == "-" {
				return write(e.stdout)
			}
			if err := atomicfile.WriteFunc(out, 0o644, write); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "etdi: wrote %d tool(s) from %d page(s) to %s\n", len(l.Tools), l.Pages, out)
			return nil
		},
	}
	sf.registerLive(cmd.Flags())
	sf.registerConfig(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "write to FILE instead of standard output")
	return cmd
}
