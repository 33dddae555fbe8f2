package main

import (
	"bytes"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
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
under _meta["dev.etdi/bundle"], so checking the file finds it.

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
			if fs := t.shownCredentials(l); len(fs) > 0 { // never saved (SPEC.md §21)
				printFindings(e.stderr, fs)
				return &exitCodeError{exitFor(fs)}
			}
			var b bytes.Buffer
			b.WriteString("{\"tools\": [")
			for i, tool := range l.Tools {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString("\n  ")
				b.Write(tool.Canonical)
			}
			b.WriteString("\n]")
			inband, err := etdi.InbandBundle(append(append([]*etdi.Value{}, l.Metas...), l.ToolMetas...))
			if err != nil {
				return fmt.Errorf("server %s: in-band bundle: %w", t.label, err)
			}
			if inband != nil {
				fmt.Fprintf(&b, ",\n\"_meta\": {%q: %s}", etdi.MetaBundleKey, inband)
			}
			b.WriteString("}\n")
			// Write what was fetched only if it reads back as a tools/list
			// with the same digests: the file must say exactly what the
			// server served.
			back, err := etdi.ParseToolsList(b.Bytes())
			if err != nil || len(back.Tools) != len(l.Tools) {
				return fmt.Errorf("server %s: the fetched tools do not read back as a tools/list: %v", t.label, err)
			}
			for i := range back.Tools {
				if back.Tools[i].Digest != l.Tools[i].Digest {
					return fmt.Errorf("server %s: tool %q does not read back with its digest", t.label, l.Tools[i].Name)
				}
			}
			if out == "" || out == "-" {
				_, err = e.stdout.Write(b.Bytes())
				return err
			}
			if err := atomicfile.Write(out, b.Bytes(), 0o644); err != nil {
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
