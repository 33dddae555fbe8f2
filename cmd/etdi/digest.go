package main

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/spf13/cobra"
)

func (e *env) digestCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "digest FILE",
		Short: "Print the definition digest of every tool in a tools/list result or manifest",
		Long: `Print the definition digest (SPEC.md §3) of each tool: SHA-256 over the
RFC 8785 canonical form of the MCP tool object, without etdi's own _meta
material. FILE is a tools/list result (object, JSON-RPC response or array)
or a manifest. Use - for standard input.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := e.readInput(args[0])
			if err != nil {
				return err
			}
			type entry struct {
				Name    string `json:"name"`
				Version string `json:"version,omitempty"`
				Digest  string `json:"digest"`
			}
			var out []entry
			if m, merr := etdi.ParseManifest(data); merr == nil {
				for _, t := range m.Tools {
					out = append(out, entry{t.Name, t.Version, t.Digest.String()})
				}
			} else {
				tl, err := etdi.ParseList(data, etdi.ListOptions{})
				if err != nil {
					return fmt.Errorf("%s: neither a manifest (%v) nor a tools/list result (%v)", args[0], merr, err)
				}
				for _, t := range tl.Tools {
					out = append(out, entry{Name: t.Name, Digest: t.Digest.String()})
				}
			}
			if asJSON {
				return e.writeJSON(out)
			}
			for _, x := range out {
				name := x.Name
				if x.Version != "" {
					name = etdi.SubjectName(x.Name, x.Version)
				}
				say(e.stdout, "%s  %s\n", x.Digest, name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
