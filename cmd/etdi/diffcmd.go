package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/spf13/cobra"
)

func (e *env) diffCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff (--tools FILE | --url URL | --config FILE --name NAME | --bundle BUNDLE) [TOOL ...] [--server -- CMD...]",
		Short: "Show the field-by-field difference between pinned and current definitions",
		Long: `Compare each tool (or only the named ones) with its pin and print what
differs: the description text, every changed schema path, annotations, and
the permissions added or removed. A tool that is not pinned is a
difference and is printed whole. Read-only: nothing is recorded.

Exit codes, as diff(1): 0 no difference, 1 differences, 2 trouble: a usage
error or an operational error (printed as "etdi: error: ..." on standard
error). When the server's bundle does not verify or the policy blocks it,
the findings are printed and the exit code is that of etdi check (10-14).`,
		Example: `  etdi diff --pins pins.db --name files --tools live.json read_file
  etdi diff --trust trust.json --pins pins.db --bundle weather.etdi.json --json`,
		RunE: e.troubleExits2(func(cmd *cobra.Command, args []string) error {
			names, dash := args, -1
			if d := cmd.ArgsLenAtDash(); d >= 0 {
				names, args, dash = args[:d], args[d:], 0
			} else {
				args = nil
			}
			o, err := e.observeOne(&sf, nil, args, dash)
			if err != nil {
				return err
			}
			if o.Blocked() {
				printFindings(e.stderr, o.Findings)
				return &exitCodeError{o.ExitCode()}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := diffTools(s, o.Observation, names)
			if err != nil {
				return err
			}
			code := exitOK
			for _, d := range out {
				if d.Kind != "unchanged" {
					code = exitError // differences, as diff(1)
				}
			}
			if asJSON {
				if err := e.writeJSON(out); err != nil {
					return err
				}
				return exitWith(code)
			}
			e.printDiffs(out, o.Observation.Server)
			return exitWith(code)
		}),
	}
	sf.register(cmd.Flags(), e)
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// toolDiff is how one tool differs from its pin, as etdi diff --json
// prints it.
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

// diffTools compares each tool of o (or only those named, each of which
// o must offer) with its pin in s, the approved definition closest to
// the tool's; a tool not pinned is a difference.
func diffTools(s *pin.Store, o *pin.Observation, names []string) ([]toolDiff, error) {
	want, missing := map[string]bool{}, map[string]bool{}
	for _, a := range names {
		want[a], missing[a] = true, true
	}
	out := []toolDiff{}
	for _, t := range o.Tools {
		if len(want) > 0 && !want[t.Name] {
			continue
		}
		delete(missing, t.Name)
		d, err := diffTool(s, o.Server, t)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	for _, n := range names {
		if missing[n] {
			return nil, fmt.Errorf("tool %q is not offered by %s", n, o.Server)
		}
	}
	return out, nil
}

// diffTool compares the tool t of server with its pin in s: not pinned,
// unchanged, or changed (its definition, permissions or version).
func diffTool(s *pin.Store, server string, t pin.Observed) (toolDiff, error) {
	p, err := s.Get(server, t.Name)
	if err != nil {
		return toolDiff{}, err
	}
	if p == nil {
		return toolDiff{Tool: t.Name, Kind: "not pinned", Version: t.Version, Changes: []etdi.Change{},
			Definition: json.RawMessage(t.Canonical), Permissions: t.Permissions}, nil
	}
	v := p.Closest(t.Digest.String()) // of several approved definitions (docs/storage.md#approved-variants)
	p = &v
	old, err1 := strictjson.Parse(p.Definition)
	cur, err2 := strictjson.Parse(t.Canonical)
	if err1 != nil || err2 != nil {
		return toolDiff{}, fmt.Errorf("tool %q: stored or current definition unreadable", t.Name)
	}
	d := toolDiff{Tool: t.Name, Kind: "unchanged", PinnedVersion: p.Version, Version: t.Version, Changes: etdi.Diff(old, cur)}
	d.PermissionsAdded, d.PermissionsRemoved = pin.PermissionDiff(p.Permissions, t.Permissions)
	if len(d.Changes) > 0 || len(d.PermissionsAdded)+len(d.PermissionsRemoved) > 0 || p.Version != t.Version {
		d.Kind = "changed"
	}
	return d, nil
}

// printDiffs prints the differences of the tools of server as text.
func (e *env) printDiffs(out []toolDiff, server string) {
	for _, d := range out {
		switch d.Kind {
		case "not pinned":
			say(e.stdout, "%s: not pinned on %s; the whole definition:\n", d.Tool, server)
			describeTool(e.stdout, d.Definition, d.Permissions)
			continue
		case "unchanged":
			say(e.stdout, "%s: no difference\n", d.Tool)
			continue
		}
		say(e.stdout, "%s: pinned %s, now %s\n", d.Tool, orDash(d.PinnedVersion), orDash(d.Version))
		sayChanges(e.stdout, "    ", d.Changes, d.PermissionsAdded, d.PermissionsRemoved)
	}
}

// troubleExits2 makes run end with exit 2 on an operational error, printed
// as usual: for diff, 1 means the tools differ, as diff(1), so trouble
// must be another code. Usage errors stay 2 and finding codes stay theirs.
func (e *env) troubleExits2(run func(cmd *cobra.Command, args []string) error) func(cmd *cobra.Command, args []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var ec *exitCodeError
		var ue *usageError
		if err == nil || errors.As(err, &ec) || errors.As(err, &ue) {
			return err
		}
		report(e.stderr, err, true)
		return &exitCodeError{exitUsage}
	}
}
