package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/spf13/cobra"
)

func (e *env) pinCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pin",
		Short: "Approve, list, show, revoke pinned tools, read their history, export and import a team lockfile",
	}
	cmd.AddCommand(e.pinApproveCmd(), e.pinListCmd(), e.pinShowCmd(), e.pinHistoryCmd(), e.pinRevokeCmd(), e.pinUnrevokeCmd(), e.pinExportCmd(), e.pinImportCmd())
	return cmd
}

func (e *env) pinApproveCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var cf cedarFlags
	var tools, scopeFlags []string
	var scopesFile string
	var asJSON, acceptInstructions, replace bool
	cmd := &cobra.Command{
		Use:   "approve (--tools FILE | --server -- CMD... | --url URL | --config FILE --name NAME | --bundle BUNDLE) [--tool NAME ...] [--scope SCOPE ... | --scopes FILE]",
		Short: "Approve (pin) what a server offers after reviewing etdi check",
		Long: `Pin the tools of a server as approved, with the same inputs as etdi check.

New tools, new versions and tools that became signed are approved (all of
them, or only those named with --tool). A changed definition, a downgrade,
a changed signer, shadowing or a look-alike name is approved only when the
tool is named with --tool: that is a decision, recorded as a re-approval in
the history. Revoked tools, a bundle that does not verify and a replayed
older bundle are never approved. Prints what was approved, and why each
refused tool was not.

A changed definition of a tool (or prompt, resource, resource template)
approved this way is added beside the definitions approved before, which
stay approved (a variant: the same server configured with other
arguments or in another host, docs/storage.md#approved-variants); --replace replaces them all
instead. An item keeps at most 16 approved definitions: beyond that the
approval is refused until one is revoked (etdi pin revoke SERVER/ITEM
--digest DIGEST).

With --config auto and no --name, every server of every host is
reviewed as etdi review does: on a terminal each pending item is asked
about; otherwise what is pending is listed (etdi review --yes=CATEGORIES
approves in bulk).

Exit codes: 0 when everything asked for is approved (the tools named with
--tool, or without --tool every tool that needed approval); otherwise the
code of the most severe refused finding (12 > 11 > 10 > 14 > 13): 11 for a
changed definition not named with --tool, changed instructions not
accepted or a replayed older bundle, 12 for a changed signer, shadowing or
a look-alike name not named, 14 for a revoked tool, 13 for a tool that
still needs approval. What can be approved is approved all the same. 1 is
an operational error, 2 a usage error. --json prints the same code as
"exitCode", with each refusal's "tool", "kind" and "reason".

With call-time policies (--cedar FILE, or the trust policy's cedar member;
docs/policies.md#call-time-policies) each approved tool's line says what they decide of its first
call in a session (allow, ask or forbid, and which policy); --json has
them under "calls".

Scopes for unsigned tools (docs/storage.md#scopes-of-unsigned-tools): --scope SCOPE (repeatable)
gives the tools named with --tool, or without --tool every tool this
approval approves, a permission scope that call-time policies read as
they read a signed tool's permissions (resource.scopes). --scopes FILE
gives each tool the scopes a reviewed overlay lists for it under
"SERVER/TOOL" ({"etdiScopes": 1, "tools": {"files/write_file":
["files:write"]}}; examples/policies/reference-servers.scopes.json). The
scopes are recorded in the pin and its history record. A tool that is
approved and unchanged is approved again when the scopes given differ
from its pin's. A changed definition approved without scopes keeps those
of the definition approved before, and says so. Scopes given to a signed
tool, an overlay without an entry for this server, or one naming a tool
the server does not offer, is an error and approves nothing.`,
		Example: `  etdi pin approve --trust trust.json --pins pins.db --bundle weather.etdi.json --tools live.json
  etdi pin approve --pins pins.db --name files --tools live.json --tool read_file
  etdi pin approve --pins pins.db --name files --tools live.json --tool write_file --scope files:write
  etdi pin approve --name filesystem --scopes reference-servers.scopes.json --server -- npx -y @modelcontextprotocol/server-filesystem ~/notes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			raiseMemoryLimit()
			if sf.config == "auto" && sf.name == "" {
				// Every server of every host: etdi review.
				if len(tools) > 0 || replace || acceptInstructions || len(scopeFlags) > 0 || scopesFile != "" {
					return approveAutoUsage(len(tools) > 0 || replace || acceptInstructions)
				}
				return e.runReview(&sf, &pf, reviewOptions{asJSON: asJSON, interactive: !asJSON && e.stdinIsTerminal()})
			}
			r, err := e.observeOne(&sf, &pf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			if err := e.approvable(r); err != nil {
				return err
			}
			tp, err := loadPolicy(sf.policy)
			if err != nil {
				return err
			}
			set, err := cf.load(sf.policy, tp)
			if err != nil {
				return err
			}
			given, all, err := approvalScopes(r, scopesFile, tools, scopeFlags)
			if err != nil {
				return err
			}
			res, err := guard.Approve(e.ctx, r, guard.ApproveOptions{Tools: tools, AcceptInstructions: acceptInstructions, Replace: replace,
				Scopes: given, ScopesAll: all,
				Review: func(c *pin.Comparison) bool {
					printSuspicious(e.stderr, c, tools)
					if acceptInstructions {
						printInstructionFindings(e.stderr, c)
					}
					return true
				}})
			if err != nil {
				return e.guardError(err)
			}
			approved, refused := res.Approved, res.Refused
			if len(scopeFlags) > 0 && len(tools) == 0 && len(approved) == 0 && len(refused) == 0 {
				// Without --tool, --scope goes to what this approval
				// approves: nothing, so no tool has the scopes asked for.
				return usagef("--scope without --tool gives scopes to the tools this approval approves, and every tool of %s matches its pin already: "+
					"no scope was given; name the tools, e.g. --tool NAME --scope %s", termtext.Escape(r.Server), termtext.ShellQuote(scopeFlags[0]))
			}
			code := res.ExitCode()
			// What the policies decide with the scopes just approved.
			after := r
			if res.Comparison != nil {
				after = r.After(res.Comparison)
			}
			calls := guard.CallDecisions(after, set, "")
			if asJSON {
				if err := e.writeApprovalJSON(r, res, calls, code); err != nil {
					return err
				}
				return exitWith(code)
			}
			e.sayApproved(approved, calls)
			e.sayRefused(refused, func() string { return e.approveCommandOf(&sf, &pf, args, cmd.ArgsLenAtDash()) })
			e.sayApprovalEnd(r, res, code)
			return exitWith(code)
		},
	}
	sf.register(cmd.Flags(), e)
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cf.register(cmd.Flags())
	cmd.Flags().StringArrayVar(&tools, "tool", nil, "approve only this tool (repeatable); required for changed definitions, downgrades, changed signers, shadowing and look-alike names")
	cmd.Flags().BoolVar(&acceptInstructions, "accept-instructions", false, "accept changed server instructions")
	cmd.Flags().BoolVar(&replace, "replace", false, "a changed definition named with --tool replaces every approved definition instead of being approved beside them as another variant")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was approved as JSON")
	cmd.Flags().StringArrayVar(&scopeFlags, "scope", nil, "give unsigned tools this permission scope, for call-time policies (repeatable): the tools named with --tool, or every tool approved")
	cmd.Flags().StringVar(&scopesFile, "scopes", "", `give unsigned tools the scopes a reviewed overlay file lists for them ({"etdiScopes": 1, "tools": {"SERVER/TOOL": ["SCOPE", ...]}})`)
	return cmd
}

// approvable refuses to approve what was observed with an error finding
// (printed, with its exit code) or a blocked server (exit 10).
func (e *env) approvable(r *guard.Report) error {
	for _, f := range r.Findings {
		if f.Severity == finding.Error {
			printFindings(e.stderr, []finding.Finding{f})
			return &exitCodeError{exitFor(r.Findings)}
		}
	}
	if r.Blocked() {
		return &exitCodeError{r.ExitCode()}
	}
	return nil
}

// approveAutoUsage is the usage error of --config auto with flags that
// name one server's items (items) or give scopes.
func approveAutoUsage(items bool) error {
	if items {
		return usagef("--config auto approves through etdi review, item by item; --tool, --replace and --accept-instructions name one server's items: add --name ENTRY")
	}
	// etdi review gives no scopes: approving without them would leave
	// every rule that reads them unmet.
	return usagef("--scope and --scopes give scopes at one server's approval: add --name ENTRY (etdi review, which --config auto runs, gives none)")
}

// approvalScopes reads the scopes an approval gives unsigned tools:
// --scope for the tools named (or all), and the overlay file --scopes.
func approvalScopes(r *guard.Report, scopesFile string, tools, scopeFlags []string) (map[string][]string, []string, error) {
	var overlay *policy.ScopesOverlay
	if scopesFile != "" {
		var err error
		if overlay, err = policy.LoadScopes(scopesFile); err != nil {
			return nil, nil, err
		}
	}
	return policy.ApprovalScopes(r.Observation, overlay, tools, scopeFlags)
}

// writeApprovalJSON prints pin approve --json.
func (e *env) writeApprovalJSON(r *guard.Report, res *guard.ApproveResult, calls []guard.CallDecision, code int) error {
	approved, refused := res.Approved, res.Refused
	if approved == nil {
		approved = []pin.Approval{}
	}
	if refused == nil {
		refused = []pin.Refusal{}
	}
	return e.writeJSON(struct {
		Server               string               `json:"server"`
		Approved             []pin.Approval       `json:"approved"`
		Refused              []pin.Refusal        `json:"refused"`
		InstructionsRecorded *string              `json:"instructionsRecorded,omitempty"`
		Calls                []guard.CallDecision `json:"calls,omitempty"`
		ExitCode             int                  `json:"exitCode"`
	}{r.Server, approved, refused, recordedInstructions(r, res), calls, code})
}

// sayApproved prints one line per approval: what was approved, its
// digest, signer, permissions and scopes, and what the call-time policies
// decide of its first call.
func (e *env) sayApproved(approved []pin.Approval, calls []guard.CallDecision) {
	for _, a := range approved {
		what, replacing := "approved", ""
		switch {
		case a.Variant:
			what, replacing = "approved another variant of", fmt.Sprintf(" (%d approved definitions)", a.Variants)
		case a.Kind == pin.ScopesChanged:
			what, replacing = "gave new scopes to", ""
		case a.Replaced != "":
			what, replacing = "re-approved", " (replacing "+a.Replaced+")"
		}
		label := pin.ItemRef(a.Pin.Item, a.Pin.Tool)
		if a.Pin.Version != "" {
			label = etdi.SubjectName(a.Pin.Tool, a.Pin.Version)
		}
		call := ""
		if c := callOf(calls, pin.ToolState{Item: a.Pin.Item, Name: a.Pin.Tool}); c != "" {
			call = ", calls: " + c
		}
		say(e.stdout, "%s %s/%s %s%s, signer %s, permissions: %s%s%s%s\n", what, a.Pin.Server, label, a.Pin.Digest, replacing, a.Pin.Signer, permList(a.Pin.Permissions), scopesText(a), servedText(a), call)
	}
}

// sayApprovalEnd prints the instructions an approval recorded, that there
// was nothing to approve, or that something was refused (code).
func (e *env) sayApprovalEnd(r *guard.Report, res *guard.ApproveResult, code int) {
	instr := recordedInstructions(r, res)
	if instr != nil {
		say(e.stdout, "recorded the instructions of %s as approved:\n", r.Server)
		sayBlock(e.stdout, "    ", *instr)
	}
	if len(res.Approved) == 0 && len(res.Refused) == 0 && instr == nil {
		say(e.stdout, "nothing to approve: every tool of %s matches its pin\n", r.Server)
	}
	if code != exitOK {
		say(e.stderr, "etdi: not everything asked for was approved: %d refused (exit %d)\n", len(res.Refused), code)
	}
}

// sayRefused prints one line per refusal, with the command that approves
// a refused tool (approveCommand gives the approval's own command).
func (e *env) sayRefused(refused []pin.Refusal, approveCommand func() string) {
	for _, r := range refused {
		if r.Tool == "" {
			what := "NOT approved"
			if finding.Kind(r.Kind).AboutInstructions() {
				what = "NOT accepted"
			}
			say(e.stdout, "%s (%s): %s\n", what, r.Kind, r.Reason)
			continue
		}
		say(e.stdout, "NOT approved %s (%s): %s\n", r.Tool, r.Kind, r.Reason)
		if hint := approveHint(finding.Finding{Kind: finding.Kind(r.Kind), Tool: r.Tool}, approveCommand()); hint != "" {
			say(e.stdout, "    %s\n", hint)
		}
	}
}

// approvedLine is the line check --yes, check --approve and etdi review
// print of one approval: what was approved, the scopes it gave or kept
// (docs/storage.md#scopes-of-unsigned-tools) and what serves it.
func approvedLine(a pin.Approval) string {
	return fmt.Sprintf("approved %s/%s %s%s%s", a.Pin.Server, toolLabel(pin.ToolState{Item: a.Pin.Item, Name: a.Pin.Tool, Version: a.Pin.Version}),
		a.Pin.Digest, scopesText(a), servedText(a))
}

// scopesText describes the scopes an approval gave an unsigned tool.
func scopesText(a pin.Approval) string {
	switch {
	case a.Kind == pin.ScopesChanged:
		before := "none"
		if len(a.ScopesBefore) > 0 {
			before = strings.Join(a.ScopesBefore, ", ")
		}
		after := "none"
		if len(a.Pin.Scopes) > 0 {
			after = strings.Join(a.Pin.Scopes, ", ")
		}
		return fmt.Sprintf(", scopes: %s (were: %s)", after, before)
	case len(a.Pin.Scopes) == 0:
		return ""
	case a.ScopesKept:
		return ", scopes: " + strings.Join(a.Pin.Scopes, ", ") + " (kept from the definition approved before)"
	}
	return ", scopes: " + strings.Join(a.Pin.Scopes, ", ")
}

func (e *env) pinRevokeCmd() *cobra.Command {
	var pf pinFlags
	var keyID, reason, policy, digest string
	var yes bool
	cmd := &cobra.Command{
		Use:   "revoke SERVER/TOOL[@VERSION] | SERVER/ITEM --digest DIGEST | --key KEY_ID",
		Short: "Revoke an approved tool, one of its versions or approved definitions, or every tool a key signed",
		Long: `Revoke an approval. SERVER/TOOL revokes the tool in every version and
every approved definition, SERVER/TOOL@VERSION one version, --key every
tool signed by that key on every server. Revoked tools fail etdi check
with exit 14 and cannot be approved again. The revocation is recorded in
the history.

SERVER/ITEM --digest DIGEST revokes one approved definition of a tool,
prompt, resource or resource template that has several (variants: the
same server configured another way, docs/storage.md#approved-variants; etdi pin list shows
them): the others stay approved, and that definition fails etdi check
with exit 14 from then on. The only approved definition of an item is
revoked with the item itself.

--key takes a full key id (sha256: and 64 hex digits), or a prefix of at
least 16 hex digits of a key the pins were signed with or the trust policy
(--trust) lists. A prefix that matches several keys or none is an error; a
full id is accepted even when no pin uses it yet, so a key can be revoked
before its tools are seen.

On a terminal etdi asks before it revokes; --yes does not ask. Without a
terminal, --yes is required. --reason (at most 1024 bytes) is recorded in
the history and shown, with who revoked and when, by every etdi check
and etdi pin approve that meets the revocation, beside the command that
lifts it (etdi pin unrevoke).`,
		Example: `  etdi pin revoke acme:weather/get_weather@1.0.0 --reason "CVE-2026-1234"
  etdi pin revoke --yes unsigned:time/get_current_time --digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
  etdi pin revoke --key sha256:1a2b3c4d5e6f7a8b --reason "key leaked"`,
		Args: revocationTarget(&keyID, &digest, "revokes one approved definition of SERVER/TOOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := revocationArgs(args, keyID, digest, reason, pf.who(), "approved")
			if err != nil {
				return err
			}
			s, err := openRevocation(&pf, &r)
			if err != nil {
				return err
			}
			defer s.Close()
			if keyID != "" {
				if r.KeyID, err = resolveRevokeKey(s, keyID, policy, cmd.Flags().Changed("trust")); err != nil {
					return err
				}
			}
			if err := e.confirmRevoke(&r, yes); err != nil {
				return err
			}
			if err := s.Revoke(r); err != nil {
				return err
			}
			if keyID != "" {
				say(e.stdout, "revoked every tool signed by key %s\n", r.KeyID)
			} else if digest != "" {
				say(e.stdout, "revoked the definition %s of %s; its other approved definitions stay approved\n", r.Digest, args[0])
			} else {
				say(e.stdout, "revoked %s\n", args[0])
			}
			say(e.stdout, "lift it with: %s\n", pin.UnrevokeCommand(&r))
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "revoke without asking (required when standard input is not a terminal)")
	cmd.Flags().StringVar(&keyID, "key", "", "revoke every tool signed by this key: a full id (sha256:...) or a prefix of at least 16 hex digits")
	cmd.Flags().StringVar(&policy, "trust", e.defaultTrust(), "trust policy whose key ids a --key prefix may name ($ETDI_TRUST)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the history and shown with every finding of the revocation (at most 1024 bytes)")
	cmd.Flags().StringVar(&digest, "digest", "", "revoke only the approved definition with this digest (sha256:...), leaving the item's other variants approved")
	return cmd
}

// confirmRevoke asks on a terminal before r is revoked; without one it
// refuses unless yes, naming the command with --yes.
func (e *env) confirmRevoke(r *pin.Revocation, yes bool) error {
	if yes {
		return nil
	}
	what := r.Target()
	if r.KeyID != "" {
		what = "every tool signed by key " + r.KeyID
	}
	if !e.stdinIsTerminal() {
		return &usageError{&commandHintError{fmt.Errorf("not revoking %s: standard input is not a terminal to confirm on, and --yes was not given", what),
			commandWithYes(e.args)}}
	}
	say(e.stderr, "revoke %s? Every etdi check and etdi run refuses it (exit 14) until an approver lifts the revocation. [y/N]: ", what)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && line == "" {
		return fmt.Errorf("not revoking %s: no answer", what)
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return fmt.Errorf("not revoked: %s (the answer was not y)", what)
	}
	return nil
}

// commandWithYes is the etdi command line that ran (args, after
// "etdi") with --yes after "revoke": each argument escaped
// (termtext.Escape) and shell-quoted, so that it can be pasted.
func commandWithYes(args []string) string {
	parts := []string{"etdi"}
	added := false
	for _, a := range args {
		parts = append(parts, termtext.ShellQuote(termtext.Escape(a)))
		if a == "revoke" && !added {
			parts, added = append(parts, "--yes"), true
		}
	}
	return strings.Join(parts, " ")
}

func (e *env) pinUnrevokeCmd() *cobra.Command {
	var pf pinFlags
	var keyID, reason, digest string
	cmd := &cobra.Command{
		Use:   "unrevoke SERVER/TOOL[@VERSION] | SERVER/ITEM --digest DIGEST | --key KEY_ID",
		Short: "Lift a revocation (an approver's act, recorded in the history)",
		Long: `Lift a revocation made with etdi pin revoke: name it as it was revoked
(etdi check prints the exact command beside every revoked finding). Who
lifts it (--by, default the current user) and why (--reason) are recorded
in the history as an unrevoke record. With a store in etcd it needs the
approver role, like approving.

What the revocation blocked is approved again as it was approved before
it: revoking kept the pins. A definition revoked on its own (--digest)
left its pin when it was revoked, so it needs approval again (etdi pin
approve ... --tool NAME). A tool that changed meanwhile is reported as
changed, as any other.`,
		Example: `  etdi pin unrevoke acme:weather/get_weather@1.0.0 --reason "fixed in 1.0.1, pinned again"
  etdi pin unrevoke --key sha256:1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b --reason "the key was not leaked"`,
		Args: revocationTarget(&keyID, &digest, "names one revoked definition of SERVER/ITEM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := revocationArgs(args, keyID, digest, reason, pf.who(), "revoked")
			if err != nil {
				return err
			}
			s, err := openRevocation(&pf, &r)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Unrevoke(r); err != nil {
				return err
			}
			if keyID != "" {
				say(e.stdout, "lifted the revocation of key %s: the tools it signed are approved again as they were\n", r.KeyID)
			} else if digest != "" {
				say(e.stdout, "lifted the revocation of %s %s: approve it again to use it (etdi pin approve ... --tool NAME)\n", args[0], r.Digest)
			} else {
				say(e.stdout, "lifted the revocation of %s: it is approved again as it was\n", args[0])
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().StringVar(&keyID, "key", "", "lift the revocation of this key (its full id, sha256:...)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the history (at most 1024 bytes)")
	cmd.Flags().StringVar(&digest, "digest", "", "lift the revocation of the approved definition with this digest (sha256:...)")
	return cmd
}

// itemOfRef tells the item kind of the part of a reference after the
// server: a tool pinned under that name, else prompt:NAME, resource:URI or
// resourceTemplate:URI as pin list shows them.
func itemOfRef(s *pin.Store, server, ref string) (item, name string, err error) {
	if p, err := s.Get(server, ref); err != nil || p != nil {
		return pin.ItemTool, ref, err
	}
	for _, it := range pin.Items {
		if n, ok := strings.CutPrefix(ref, it+":"); ok {
			return it, n, nil
		}
	}
	return pin.ItemTool, ref, nil
}

// servedText says what serves an approved tool when that changed with the
// approval: the old and the new artifact or endpoint.
func servedText(a pin.Approval) string {
	if a.Kind == pin.ServedRecorded {
		return fmt.Sprintf(", served by %s (recorded)", a.Pin.Served)
	}
	if a.ServedBefore == "" || a.ServedBefore == a.Pin.Served {
		return ""
	}
	return fmt.Sprintf(", served by %s (was %s)", a.Pin.Served, a.ServedBefore)
}

// revocationTarget checks the arguments of etdi pin revoke and unrevoke:
// a SERVER/TOOL[@VERSION] argument or --key, and --digest (what it does:
// digestUse) only with the former.
func revocationTarget(keyID, digest *string, digestUse string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if (len(args) == 1) == (*keyID != "") {
			return usagef("give either SERVER/TOOL[@VERSION] or --key KEY_ID")
		}
		if *digest != "" && *keyID != "" {
			return usagef("--digest %s; it does not go with --key", digestUse)
		}
		return nil
	}
}

// openRevocation opens the pin store for a revocation or its lifting and,
// for one definition (--digest), tells the kind of item r names.
func openRevocation(pf *pinFlags, r *pin.Revocation) (*pin.Store, error) {
	s, err := pf.open(false)
	if err != nil {
		return nil, err
	}
	if r.Digest != "" {
		if r.Item, r.Tool, err = itemOfRef(s, r.Server, r.Tool); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// revocationArgs is the revocation etdi pin revoke and unrevoke name: a
// SERVER/TOOL[@VERSION] argument or --key, and with --digest one
// definition (state: "approved" or "revoked"), which names no version.
func revocationArgs(args []string, keyID, digest, reason, by, state string) (pin.Revocation, error) {
	r := pin.Revocation{KeyID: keyID, By: by, Reason: reason}
	if len(args) == 1 {
		var err error
		if r.Server, r.Tool, r.Version, err = pin.ParseRef(args[0]); err != nil {
			return r, &usageError{err}
		}
	}
	if digest != "" {
		if r.Version != "" {
			return r, usagef("--digest names one %s definition: give SERVER/TOOL without @VERSION", state)
		}
		r.Digest = digest
	}
	return r, nil
}
