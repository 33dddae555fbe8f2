package main

import (
	"encoding/json"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
)

func (e *env) diffCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff (--tools FILE | --url URL | --config FILE --name NAME | --bundle BUNDLE) [TOOL ...] [--server -- CMD...]",
		Short: "Show the field-by-field difference between pinned and current definitions",
		Long: `Compare each tool (or the named ones) with its pin and print what differs:
the description text, every changed schema path, annotations, and the
permissions added or removed. Read-only: nothing is recorded.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, dash := args, -1
			if d := cmd.ArgsLenAtDash(); d >= 0 {
				names, args, dash = args[:d], args[d:], 0
			} else {
				args = nil
			}
			o, err := e.observeOne(&sf, args, dash)
			if err != nil {
				return err
			}
			if o.blocked() {
				printFindings(e.stderr, o.findings)
				return &exitCodeError{exitFor(o.findings)}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			type toolDiff struct {
				Tool               string            `json:"tool"`
				Kind               string            `json:"kind"`
				PinnedVersion      string            `json:"pinnedVersion,omitempty"`
				Version            string            `json:"version,omitempty"`
				Changes            []etdi.Change     `json:"changes"`
				PermissionsAdded   []etdi.Permission `json:"permissionsAdded,omitempty"`
				PermissionsRemoved []etdi.Permission `json:"permissionsRemoved,omitempty"`
				// Definition is the whole definition of a tool not pinned.
				Definition  json.RawMessage   `json:"definition,omitempty"`
				Permissions []etdi.Permission `json:"permissions,omitempty"`
			}
			want := map[string]bool{}
			for _, a := range names {
				want[a] = true
			}
			out := []toolDiff{}
			for _, t := range o.obs.Tools {
				if len(want) > 0 && !want[t.Name] {
					continue
				}
				delete(want, t.Name)
				p, err := s.Get(o.obs.Server, t.Name)
				if err != nil {
					return err
				}
				if p == nil {
					out = append(out, toolDiff{Tool: t.Name, Kind: "not pinned", Version: t.Version, Changes: []etdi.Change{},
						Definition: json.RawMessage(t.Canonical), Permissions: t.Permissions})
					continue
				}
				old, err1 := etdi.ParseJSON(p.Definition)
				cur, err2 := etdi.ParseJSON(t.Canonical)
				if err1 != nil || err2 != nil {
					return fmt.Errorf("tool %q: stored or current definition unreadable", t.Name)
				}
				d := toolDiff{Tool: t.Name, Kind: "unchanged", PinnedVersion: p.Version, Version: t.Version, Changes: etdi.Diff(old, cur)}
				d.PermissionsAdded, d.PermissionsRemoved = pin.PermissionDiff(p.Permissions, t.Permissions)
				if len(d.Changes) > 0 || len(d.PermissionsAdded)+len(d.PermissionsRemoved) > 0 || p.Version != t.Version {
					d.Kind = "changed"
				}
				out = append(out, d)
			}
			for n := range want {
				return fmt.Errorf("tool %q is not offered by %s", n, o.obs.Server)
			}
			if asJSON {
				return e.writeJSON(out)
			}
			for _, d := range out {
				switch d.Kind {
				case "not pinned":
					say(e.stdout, "%s: not pinned on %s; the whole definition:\n", d.Tool, o.obs.Server)
					describeTool(e.stdout, d.Definition, d.Permissions)
					continue
				case "unchanged":
					say(e.stdout, "%s: no difference\n", d.Tool)
					continue
				}
				say(e.stdout, "%s: pinned %s, now %s\n", d.Tool, orDash(d.PinnedVersion), orDash(d.Version))
				for _, c := range d.Changes {
					say(e.stdout, "    %s\n", c)
				}
				for _, p := range d.PermissionsAdded {
					say(e.stdout, "    + permission %s\n", permList([]etdi.Permission{p}))
				}
				for _, p := range d.PermissionsRemoved {
					say(e.stdout, "    - permission %s\n", permList([]etdi.Permission{p}))
				}
			}
			return nil
		},
	}
	sf.register(cmd.Flags(), e)
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
