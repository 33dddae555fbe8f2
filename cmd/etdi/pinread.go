package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
)

func (e *env) pinListCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every pinned tool and every revocation",
		Long: `List every pinned tool: version, digest, signer, who approved it and when,
and under each pin the revocations about it (of the tool, of one of its
versions, or of the key that signed it: who, when and why). A pin marked
REVOKED fails etdi check with exit 14. Revocations about no pin (a key
revoked before any pin used it) follow the pins.

An item with several approved definitions (variants: the same server
configured another way, docs/storage.md#approved-variants) is listed with the latest, and
under it each earlier one still approved, with who approved it and when.

--json prints {"schemaVersion": 1, "pins": [...]}: each pin with
"revoked" (true when a revocation withdraws the pin as pinned),
"revocations", and "variants" (every approved definition, oldest first,
when there are several) (schemas/pin-list.schema.json).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			pins, err := s.List()
			if err != nil {
				return err
			}
			revs, err := s.Revocations()
			if err != nil {
				return err
			}
			rows := []pinRow{}
			used := make([]bool, len(revs))
			for i := range pins {
				p := &pins[i]
				rv, revoked := revocationsAbout(revs, p, used)
				rows = append(rows, pinRow{p.Ref(), p.Version, p.Digest, p.Signer.String(), p.ApprovedBy, p.ApprovedAt, revoked, rv, variantRows(p, revs)})
			}
			if asJSON {
				return e.writeJSON(pinListOutput{jsonSchemaVersion, rows})
			}
			for _, r := range rows {
				d, _ := etdi.ParseDigest(r.Digest)
				v := r.Version
				if v == "" {
					v = "-"
				}
				state := ""
				if r.Revoked {
					state = "  REVOKED"
				}
				if len(r.Variants) > 1 {
					state += fmt.Sprintf("  (%d approved definitions)", len(r.Variants))
				}
				say(e.stdout, "%s  %s  sha256:%s  %s  approved by %s at %s%s\n", r.Ref, v, d.Short(), r.Signer, r.ApprovedBy, r.ApprovedAt.Format(time.RFC3339), state)
				for _, vr := range r.Variants[:max(len(r.Variants)-1, 0)] {
					say(e.stdout, "    %s\n", vr.line())
				}
				for _, rv := range r.Revocations {
					say(e.stdout, "    %s\n", rv.line())
				}
			}
			// Revocations of no pinned tool: a key revoked before any pin
			// used it, or a tool whose pin was replaced under another
			// signer.
			for i := range revs {
				if !used[i] {
					rv := viewRevocation(&revs[i], nil)
					say(e.stdout, "%s\n", rv.line())
				}
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (e *env) pinShowCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show SERVER/TOOL | SERVER/prompt:NAME | SERVER/resource:URI",
		Short: "Show one pin with its approved definition and its revocations",
		Long: `Show one pin: version, digest, signer, provider, permissions, who
approved it and when, the revocations about it (of the tool, of one of its
versions, or of the key that signed it: who, when and why) and the
approved definition. A prompt, resource or resource template is named as
pin list shows it (acme:weather/prompt:weather_report). --json prints the
pin with "revoked" and "revocations".`,
		Example: `  etdi pin show acme:weather/get_weather`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool, _, perr := pin.ParseRef(args[0])
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			var p *pin.Pin
			if perr == nil {
				if p, err = s.Get(server, tool); err != nil {
					return err
				}
			}
			if p == nil { // a prompt, resource or resource template, by its ref
				pins, err := s.List()
				if err != nil {
					return err
				}
				for i := range pins {
					if pins[i].Item != pin.ItemTool && pins[i].Ref() == args[0] {
						p = &pins[i]
					}
				}
			}
			if p == nil && perr != nil {
				return &usageError{perr}
			}
			if p == nil {
				return fmt.Errorf("no pin %s", args[0])
			}
			revs, err := s.Revocations()
			if err != nil {
				return err
			}
			rv, revoked := revocationsAbout(revs, p, nil)
			if asJSON {
				return e.writeJSON(struct {
					*pin.Pin
					Revoked     bool             `json:"revoked"`
					Revocations []revocationView `json:"revocations"`
				}{p, revoked, rv})
			}
			say(e.stdout, "%s\n  version      %s\n  digest       %s\n  signer       %s\n  provider     %s\n  permissions  %s\n  approved     by %s at %s\n",
				p.Ref(), orDash(p.Version), p.Digest, p.Signer, orDash(p.Provider), permList(p.Permissions), p.ApprovedBy, p.ApprovedAt.Format(time.RFC3339))
			if len(rv) == 0 {
				say(e.stdout, "  revoked      no\n")
			}
			for _, r := range rv {
				say(e.stdout, "  %s\n", r.line())
			}
			if vs := variantRows(p, revs); len(vs) > 1 {
				say(e.stdout, "  variants     %d approved definitions (this one is the latest):\n", len(vs))
				for _, vr := range vs {
					say(e.stdout, "    %s\n", vr.line())
				}
			}
			say(e.stdout, "  definition\n")
			describeTool(e.stdout, p.Definition, p.Permissions)
			say(e.stdout, "  definition (JSON)\n")
			sayJSON(e.stdout, "    ", p.Definition)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (e *env) pinHistoryCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history [SERVER[/TOOL]]",
		Short: "Show the history of approvals, revocations and findings",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("history takes at most one SERVER[/TOOL]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var server, tool, whole string
			if len(args) == 1 {
				// A server name may hold '/' (@scope/name): the whole
				// argument names a server, or SERVER/TOOL.
				server, whole = args[0], args[0]
				if i := strings.LastIndexByte(args[0], '/'); i > 0 {
					server, tool = args[0][:i], args[0][i+1:]
				}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			recs := []pin.Record{}
			err = s.Records(func(_ []byte, r *pin.Record) error {
				if (server == "" || r.Server == server) && (tool == "" || r.Tool == tool) || r.Server == whole ||
					(r.Item != pin.ItemTool && r.Server+"/"+pin.ItemRef(r.Item, r.Tool) == whole) {
					recs = append(recs, *r)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return e.writeJSON(recs)
			}
			for _, r := range recs {
				say(e.stdout, "%s\n", historyLine(&r))
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func historyLine(r *pin.Record) string {
	target := r.Server
	if r.Tool != "" {
		target += "/" + pin.ItemRef(r.Item, r.Tool)
	}
	if r.Version != "" {
		target += "@" + r.Version
	}
	if r.KeyID != "" {
		target = "key " + r.KeyID
	}
	parts := []string{fmt.Sprintf("#%d", r.Index), r.Time.Format(time.RFC3339), r.Type}
	if r.Kind != "" {
		parts = append(parts, r.Kind)
	}
	parts = append(parts, target)
	if r.Digest != "" {
		parts = append(parts, r.Digest)
	}
	if r.Variant {
		parts = append(parts, "as another variant")
	}
	if r.Replaced != "" {
		parts = append(parts, "replacing "+r.Replaced)
	}
	if r.By != "" {
		parts = append(parts, "by "+r.By)
	}
	if r.Outcome != "" {
		parts = append(parts, fmt.Sprintf("%s in %s, arguments %s", r.Outcome, time.Duration(r.DurationMicros)*time.Microsecond, r.Arguments))
	}
	if r.Decision != "" {
		d := "policy " + r.Decision
		if len(r.Policies) > 0 {
			d += " (" + strings.Join(r.Policies, ", ") + ")"
		}
		if r.Answer != "" {
			d += ", answer " + r.Answer
		}
		parts = append(parts, d)
	}
	if r.Type != pin.RecordApprove && r.Type != pin.RecordReapprove && r.Message != "" {
		parts = append(parts, "- "+r.Message)
	}
	return strings.Join(parts, " ")
}

// variantRows lists the approved definitions of p, oldest first, when it
// has more than one; nil otherwise.
func variantRows(p *pin.Pin, revs []pin.Revocation) []variantRow {
	if len(p.Variants) == 0 {
		return nil
	}
	var out []variantRow
	for _, v := range p.All() {
		revoked := false
		for i := range revs {
			revoked = revoked || revs[i].Revokes(&v)
		}
		out = append(out, variantRow{Version: v.Version, Digest: v.Digest, ApprovedBy: v.ApprovedBy, ApprovedAt: v.ApprovedAt, Served: v.Served, Revoked: revoked})
	}
	return out
}

// line is the text of one approved definition for a person; say escapes
// it.
func (v variantRow) line() string {
	s := "variant " + v.Digest
	if v.Version != "" {
		s += " " + v.Version
	}
	s += " approved by " + v.ApprovedBy + " at " + v.ApprovedAt.Format(time.RFC3339)
	if v.Served != "" {
		s += ", served by " + v.Served
	}
	if v.Revoked {
		s += "  REVOKED"
	}
	return s
}
