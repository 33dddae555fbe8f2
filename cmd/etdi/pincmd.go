package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/cobra"
)

// checkReport is what etdi check found for one server, as prose or JSON.
type checkReport struct {
	Target       string           `json:"target"`
	Server       string           `json:"server,omitempty"`
	Verification *verify.Result   `json:"verification,omitempty"`
	Tools        []pin.ToolState  `json:"tools"`
	Findings     []verify.Finding `json:"findings"`
	// Approved lists what --yes or --approve approved.
	Approved []pin.Approval `json:"approved,omitempty"`
	// Error is why the server could not be checked (exit 1).
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
	location string
	// defs are the offered tools' definitions, for the prose report.
	defs map[string]observedTool
}

// blockedUnsigned reports whether a server was blocked only because the
// trust policy blocks unsigned tools.
func blockedUnsigned(reps []*checkReport) bool {
	for _, r := range reps {
		for _, f := range r.Findings {
			if f.Kind == verify.UnsignedTool && f.Severity == verify.Error {
				return true
			}
		}
	}
	return false
}

// checkOutput is the whole result of etdi check.
type checkOutput struct {
	Servers  []*checkReport `json:"servers"`
	ExitCode int            `json:"exitCode"`
}

func (e *env) checkCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var asJSON, asSARIF, yes, interactive, acceptInstructions bool
	cmd := &cobra.Command{
		Use:   "check (--tools FILE | --server -- CMD... | --url URL | --config FILE|auto | --bundle BUNDLE)",
		Short: "Check a server's tools against the trust policy and the approved pins",
		Long: `Check what a server offers against the trust policy and the pin database,
before the server is launched.

The tools come from a live server (--server -- CMD..., started over stdio;
--url, Streamable HTTP; --config, every server of a host configuration, or
all found with --config auto) or from a saved tools/list (--tools). The
bundle comes from --bundle or, if the server carries one, from its
tools/list _meta. With a verified bundle the server is known as
<provider>:<server>; without one as unsigned:<name> (--name, the config
entry name, or the program name), the policy's unsigned rule applies, and
its tools are pinned by digest, so a changed definition is still caught.

Every tool is compared with its pin: a tool never approved, or a higher
version, needs approval (13); the same version with another definition or
other permissions, changed server instructions, a lower version or an
older bundle is a rug pull or downgrade (11); another signer, a name
approved on another server or one that looks like an approved name is
impersonation (12); a revoked tool, version or key is 14. Error and warning
findings are appended to the history. A server that cannot be checked is
an error (1) unless another server has a security finding.

--yes approves what etdi pin approve would (new tools and versions) and
prints it; --approve asks about each new or changed tool on a terminal.`,
		Example: `  etdi check --trust trust.json --pins pins.db --bundle weather.etdi.json --tools live.json
  etdi check --server -- node server.js --flag
  etdi check --url http://127.0.0.1:3001/mcp --header "Authorization: Bearer $TOKEN"
  etdi check --config ~/.cursor/mcp.json --name weather
  etdi check --config auto --sarif > etdi.sarif`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asSARIF {
				return usagef("--json and --sarif cannot be combined")
			}
			if yes && interactive {
				return usagef("--yes and --approve cannot be combined")
			}
			if interactive && !e.stdinIsTerminal() {
				return usagef("--approve asks questions and needs a terminal; use --yes in scripts")
			}
			ts, err := e.targets(&sf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			p, err := loadPolicy(sf.policy)
			if err != nil {
				return err
			}
			out := &checkOutput{Servers: []*checkReport{}}
			for i := range ts {
				rep := e.checkTarget(&sf, &pf, &ts[i], p, yes, interactive, acceptInstructions)
				out.Servers = append(out.Servers, rep)
			}
			out.ExitCode = combineExit(out.Servers)
			switch {
			case asJSON:
				if err := e.writeJSON(out); err != nil {
					return err
				}
			case asSARIF:
				if err := e.writeJSON(sarifLog(out)); err != nil {
					return err
				}
			default:
				for i, rep := range out.Servers {
					if i > 0 {
						say(e.stdout, "\n")
					}
					printCheck(e.stdout, rep)
				}
			}
			switch out.ExitCode {
			case exitOK:
			case exitApproval:
				say(e.stderr, "etdi: approval required (exit 13): review the tools above, then run etdi pin approve with the same inputs, or check again with --approve\n")
			default:
				say(e.stderr, "etdi: check failed (exit %d)\n", out.ExitCode)
			}
			if blockedUnsigned(out.Servers) {
				fmt.Fprintf(e.stderr, "etdi: hint: a server without a signed bundle is blocked by the trust policy (unsigned: block, the default).\n"+
					"etdi: hint: to review and pin unsigned servers by digest instead, with a warning on each check: etdi trust unsigned warn --trust %s\n", sf.policy)
			}
			if out.ExitCode != exitOK {
				return &exitCodeError{out.ExitCode}
			}
			return nil
		},
	}
	sf.register(cmd.Flags(), e)
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&asSARIF, "sarif", false, "print the findings as SARIF 2.1.0, for code scanning")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve new tools and new versions without asking, and print what was approved")
	cmd.Flags().BoolVar(&interactive, "approve", false, "on a terminal, show each new or changed tool and ask whether to approve it")
	cmd.Flags().BoolVar(&acceptInstructions, "accept-instructions", false, "with --yes: also accept changed server instructions")
	return cmd
}

// combineExit is the exit code of several servers: the most severe
// finding code; else 1 if a server could not be checked; else 0.
func combineExit(reps []*checkReport) int {
	code, failed := exitOK, false
	for _, r := range reps {
		if r.Error != "" {
			failed = true
			if r.ExitCode != exitError { // a pin database the history does not justify
				code = worse(code, r.ExitCode)
			}
			continue
		}
		code = worse(code, r.ExitCode)
	}
	if failed && (code == exitOK || code == exitApproval) {
		return exitError
	}
	return code
}

// checkTarget checks one server; errors become the report's Error.
func (e *env) checkTarget(sf *serverFlags, pf *pinFlags, t *target, p *trust.Policy, yes, interactive, acceptInstructions bool) *checkReport {
	rep := &checkReport{Target: t.label, Tools: []pin.ToolState{}, Findings: []verify.Finding{}, location: t.location}
	fail := func(err error) *checkReport {
		rep.Error, rep.ExitCode = err.Error(), exitError
		return rep
	}
	if len(t.problems) > 0 {
		return fail(fmt.Errorf("not checked: %s", strings.Join(t.problems, "; ")))
	}
	o, err := e.observe(sf, t, p)
	if err != nil {
		return fail(err)
	}
	rep.Verification = o.result
	rep.Findings = append(rep.Findings, o.findings...)
	if o.blocked() {
		rep.ExitCode = exitFor(rep.Findings)
		if rep.ExitCode == exitOK {
			rep.ExitCode = exitSignature
		}
		return rep
	}
	rep.defs = toolDefs(o.obs)
	s, err := pf.open(false)
	if err != nil {
		return fail(err)
	}
	c, err := s.Check(o.obs, pf.who())
	before := c
	switch {
	case err == nil && interactive && !hasError(o.findings):
		// A person may take minutes: never hold the database meanwhile.
		s.Close()
		c, rep.Approved, err = e.approveInteractively(pf, o, c)
	case err == nil && yes && !hasError(o.findings):
		opts := pin.ApproveOptions{By: pf.who(), AcceptInstructions: acceptInstructions}
		if rep.Approved, _, err = s.Approve(o.obs, opts); err == nil {
			c, err = s.Compare(o.obs)
		}
		s.Close()
	default:
		s.Close()
	}
	if err != nil {
		var ue *pin.UnjustifiedError
		if errors.As(err, &ue) {
			rep.Error, rep.ExitCode = err.Error(), exitSignature
			return rep
		}
		return fail(err)
	}
	rep.Server, rep.Tools = c.Server, c.Tools
	rep.Findings = append(rep.Findings, keepSuspicious(before, c)...)
	rep.ExitCode = exitFor(rep.Findings)
	return rep
}

func hasError(fs []verify.Finding) bool {
	for _, f := range fs {
		if f.Severity == verify.Error {
			return true
		}
	}
	return false
}

func printCheck(w io.Writer, rep *checkReport) {
	say(w, "== %s\n", rep.Target)
	if rep.Error != "" {
		say(w, "ERROR: %s\n", rep.Error)
		return
	}
	if r := rep.Verification; r != nil {
		if r.Verified {
			var by []string
			if r.Signer != nil {
				by = append(by, fmt.Sprintf("key %s (%s)", keys.ShortID(r.Signer.KeyID), r.Signer.Algorithm))
			}
			if r.Token != nil {
				by = append(by, fmt.Sprintf("token of %s for %s", r.Token.Issuer, r.Token.Subject))
			}
			say(w, "bundle %s verified: provider %s, %s\n", r.Source, r.Provider.ID, strings.Join(by, " and "))
		} else {
			say(w, "bundle %s NOT verified\n", r.Source)
		}
	}
	if rep.Server != "" {
		say(w, "server %s\n", rep.Server)
	}
	width := 0
	for _, t := range rep.Tools {
		width = max(width, utf8.RuneCountInString(termtext.Escape(toolLabel(t))))
	}
	for _, t := range rep.Tools {
		d, _ := etdi.ParseDigest(t.Digest)
		status := map[string]string{"ok": "ok", "new": "APPROVAL REQUIRED", "changed": "CHANGED", "blocked": "BLOCKED", "removed": "removed"}[t.Status]
		say(w, "  %-*s  sha256:%s  %s\n", width, toolLabel(t), d.Short(), status)
	}
	printFindingsWith(w, rep.Findings, rep.defs)
	for _, a := range rep.Approved {
		say(w, "approved %s/%s %s\n", a.Pin.Server, toolLabel(pin.ToolState{Name: a.Pin.Tool, Version: a.Pin.Version}), a.Pin.Digest)
	}
}

func toolLabel(t pin.ToolState) string {
	if t.Version == "" {
		return t.Name
	}
	return etdi.SubjectName(t.Name, t.Version)
}

func permList(ps []etdi.Permission) string {
	if len(ps) == 0 {
		return "none"
	}
	var out []string
	for _, p := range ps {
		s := p.Scope
		if p.Description != "" {
			s += " (" + p.Description + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func (e *env) pinCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pin",
		Short: "Approve, list, show, revoke pinned tools and read their history",
	}
	cmd.AddCommand(e.pinApproveCmd(), e.pinListCmd(), e.pinShowCmd(), e.pinHistoryCmd(), e.pinRevokeCmd())
	return cmd
}

func (e *env) pinApproveCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var tools []string
	var asJSON, acceptInstructions bool
	cmd := &cobra.Command{
		Use:   "approve (--tools FILE | --server -- CMD... | --url URL | --config FILE --name NAME | --bundle BUNDLE) [--tool NAME ...]",
		Short: "Approve (pin) what a server offers after reviewing etdi check",
		Long: `Pin the tools of a server as approved, with the same inputs as etdi check.

New tools, new versions and tools that became signed are approved (all of
them, or only those named with --tool). A changed definition, a downgrade,
a changed signer, shadowing or a look-alike name is approved only when the
tool is named with --tool: that is a decision, recorded as a re-approval in
the history. Revoked tools, a bundle that does not verify and a replayed
older bundle are never approved. Prints what was approved.`,
		Example: `  etdi pin approve --trust trust.json --pins pins.db --bundle weather.etdi.json --tools live.json
  etdi pin approve --pins pins.db --name files --tools live.json --tool read_file`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := e.observeOne(&sf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			for _, f := range o.findings {
				if f.Severity == verify.Error {
					printFindings(e.stderr, []verify.Finding{f})
					return &exitCodeError{exitFor(o.findings)}
				}
			}
			if o.blocked() {
				return &exitCodeError{exitSignature}
			}
			s, err := pf.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			if c, err := s.Compare(o.obs); err == nil {
				printSuspicious(e.stderr, c, tools)
			}
			approved, refused, err := s.Approve(o.obs, pin.ApproveOptions{Tools: tools, By: pf.who(), AcceptInstructions: acceptInstructions})
			if err != nil {
				return err
			}
			if asJSON {
				if approved == nil {
					approved = []pin.Approval{}
				}
				if refused == nil {
					refused = []pin.Refusal{}
				}
				return e.writeJSON(struct {
					Server   string         `json:"server"`
					Approved []pin.Approval `json:"approved"`
					Refused  []pin.Refusal  `json:"refused"`
				}{o.obs.Server, approved, refused})
			}
			for _, a := range approved {
				what, replacing := "approved", ""
				if a.Replaced != "" {
					what, replacing = "re-approved", " (replacing "+a.Replaced+")"
				}
				label := a.Pin.Tool
				if a.Pin.Version != "" {
					label = etdi.SubjectName(a.Pin.Tool, a.Pin.Version)
				}
				say(e.stdout, "%s %s/%s %s%s, signer %s, permissions: %s\n", what, a.Pin.Server, label, a.Pin.Digest, replacing, a.Pin.Signer, permList(a.Pin.Permissions))
			}
			for _, r := range refused {
				if r.Tool == "" {
					say(e.stdout, "NOT accepted: %s\n", r.Reason)
					continue
				}
				say(e.stdout, "NOT approved %s: %s\n", r.Tool, r.Reason)
			}
			if len(approved) == 0 && len(refused) == 0 {
				say(e.stdout, "nothing to approve: every tool of %s matches its pin\n", o.obs.Server)
			}
			return nil
		},
	}
	sf.register(cmd.Flags(), e)
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().StringArrayVar(&tools, "tool", nil, "approve only this tool (repeatable); required for changed definitions, downgrades, changed signers, shadowing and look-alike names")
	cmd.Flags().BoolVar(&acceptInstructions, "accept-instructions", false, "accept changed server instructions")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was approved as JSON")
	return cmd
}

func (e *env) pinListCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every pinned tool",
		Args:  exactArgs(0),
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
			type row struct {
				Ref        string    `json:"ref"`
				Version    string    `json:"version,omitempty"`
				Digest     string    `json:"digest"`
				Signer     string    `json:"signer"`
				ApprovedBy string    `json:"approvedBy"`
				ApprovedAt time.Time `json:"approvedAt"`
			}
			rows := []row{}
			for _, p := range pins {
				rows = append(rows, row{p.Ref(), p.Version, p.Digest, p.Signer.String(), p.ApprovedBy, p.ApprovedAt})
			}
			if asJSON {
				return e.writeJSON(rows)
			}
			for _, r := range rows {
				d, _ := etdi.ParseDigest(r.Digest)
				v := r.Version
				if v == "" {
					v = "-"
				}
				say(e.stdout, "%s  %s  sha256:%s  %s  approved by %s at %s\n", r.Ref, v, d.Short(), r.Signer, r.ApprovedBy, r.ApprovedAt.Format(time.RFC3339))
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
		Use:     "show SERVER/TOOL",
		Short:   "Show one pin with its approved definition",
		Example: `  etdi pin show acme:weather/get_weather`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool, _, err := pin.ParseRef(args[0])
			if err != nil {
				return &usageError{err}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := s.Get(server, tool)
			if err != nil {
				return err
			}
			if p == nil {
				return fmt.Errorf("no pin %s", args[0])
			}
			if asJSON {
				return e.writeJSON(p)
			}
			say(e.stdout, "%s\n  version      %s\n  digest       %s\n  signer       %s\n  provider     %s\n  permissions  %s\n  approved     by %s at %s\n  definition\n",
				p.Ref(), orDash(p.Version), p.Digest, p.Signer, orDash(p.Provider), permList(p.Permissions), p.ApprovedBy, p.ApprovedAt.Format(time.RFC3339))
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
				if (server == "" || r.Server == server) && (tool == "" || r.Tool == tool) || r.Server == whole {
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
		target += "/" + r.Tool
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
	if r.Replaced != "" {
		parts = append(parts, "replacing "+r.Replaced)
	}
	if r.By != "" {
		parts = append(parts, "by "+r.By)
	}
	if r.Type != pin.RecordApprove && r.Type != pin.RecordReapprove && r.Message != "" {
		parts = append(parts, "- "+r.Message)
	}
	return strings.Join(parts, " ")
}

func (e *env) pinRevokeCmd() *cobra.Command {
	var pf pinFlags
	var keyID, reason string
	cmd := &cobra.Command{
		Use:   "revoke SERVER/TOOL[@VERSION] | --key KEY_ID",
		Short: "Revoke an approved tool, one of its versions, or every tool a key signed",
		Long: `Revoke an approval. SERVER/TOOL revokes the tool in every version,
SERVER/TOOL@VERSION one version, --key every tool signed by that key on
every server. Revoked tools fail etdi check with exit 14 and cannot be
approved again. The revocation is recorded in the history.`,
		Example: `  etdi pin revoke acme:weather/get_weather@1.0.0 --reason "CVE-2026-1234"
  etdi pin revoke --key sha256:1a2b...`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (keyID != "") {
				return usagef("give either SERVER/TOOL[@VERSION] or --key KEY_ID")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			r := pin.Revocation{KeyID: keyID, By: pf.who(), Reason: reason}
			if len(args) == 1 {
				var err error
				if r.Server, r.Tool, r.Version, err = pin.ParseRef(args[0]); err != nil {
					return &usageError{err}
				}
			}
			s, err := pf.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Revoke(r); err != nil {
				return err
			}
			if keyID != "" {
				say(e.stdout, "revoked every tool signed by key %s\n", keyID)
			} else {
				say(e.stdout, "revoked %s\n", args[0])
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().StringVar(&keyID, "key", "", "revoke every tool signed by this key id (sha256:...)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the history")
	return cmd
}

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
