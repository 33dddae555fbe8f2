package main

import (
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/cobra"
)

func (e *env) pinCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pin",
		Short: "Approve, list, show, revoke pinned tools, read their history, export and import a team lockfile",
	}
	cmd.AddCommand(e.pinApproveCmd(), e.pinListCmd(), e.pinShowCmd(), e.pinHistoryCmd(), e.pinRevokeCmd(), e.pinExportCmd(), e.pinImportCmd())
	return cmd
}

func (e *env) pinApproveCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var cf cedarFlags
	var tools []string
	var asJSON, acceptInstructions, replace bool
	cmd := &cobra.Command{
		Use:   "approve (--tools FILE | --server -- CMD... | --url URL | --config FILE --name NAME | --bundle BUNDLE) [--tool NAME ...]",
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
arguments or in another host, SPEC.md §14.1); --replace replaces them all
instead. An item keeps at most 16 approved definitions: beyond that the
approval is refused until one is revoked (etdi pin revoke SERVER/ITEM
--digest DIGEST).

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
SPEC.md §26) each approved tool's line says what they decide of its first
call in a session (allow, ask or forbid, and which policy); --json has
them under "calls".`,
		Example: `  etdi pin approve --trust trust.json --pins pins.db --bundle weather.etdi.json --tools live.json
  etdi pin approve --pins pins.db --name files --tools live.json --tool read_file`,
		RunE: func(cmd *cobra.Command, args []string) error {
			raiseMemoryLimit()
			r, err := e.observeOne(&sf, &pf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			for _, f := range r.Findings {
				if f.Severity == verify.Error {
					printFindings(e.stderr, []verify.Finding{f})
					return &exitCodeError{exitFor(r.Findings)}
				}
			}
			if r.Blocked() {
				return &exitCodeError{exitSignature}
			}
			tp, err := loadPolicy(sf.policy)
			if err != nil {
				return err
			}
			set, err := cf.load(sf.policy, tp)
			if err != nil {
				return err
			}
			calls := guard.CallDecisions(r, set, "")
			res, err := guard.Approve(e.ctx, r, guard.ApproveOptions{Tools: tools, AcceptInstructions: acceptInstructions, Replace: replace,
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
			code := res.ExitCode()
			if asJSON {
				if approved == nil {
					approved = []pin.Approval{}
				}
				if refused == nil {
					refused = []pin.Refusal{}
				}
				if err := e.writeJSON(struct {
					Server               string               `json:"server"`
					Approved             []pin.Approval       `json:"approved"`
					Refused              []pin.Refusal        `json:"refused"`
					InstructionsRecorded *string              `json:"instructionsRecorded,omitempty"`
					Calls                []guard.CallDecision `json:"calls,omitempty"`
					ExitCode             int                  `json:"exitCode"`
				}{r.Server, approved, refused, recordedInstructions(r, res), calls, code}); err != nil {
					return err
				}
				return exitWith(code)
			}
			for _, a := range approved {
				what, replacing := "approved", ""
				switch {
				case a.Variant:
					what, replacing = "approved another variant of", fmt.Sprintf(" (%d approved definitions)", a.Variants)
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
				say(e.stdout, "%s %s/%s %s%s, signer %s, permissions: %s%s%s\n", what, a.Pin.Server, label, a.Pin.Digest, replacing, a.Pin.Signer, permList(a.Pin.Permissions), servedText(a), call)
			}
			for _, r := range refused {
				if r.Tool == "" {
					what := "NOT approved"
					if verify.Kind(r.Kind).AboutInstructions() {
						what = "NOT accepted"
					}
					say(e.stdout, "%s (%s): %s\n", what, r.Kind, r.Reason)
					continue
				}
				say(e.stdout, "NOT approved %s (%s): %s\n", r.Tool, r.Kind, r.Reason)
				if hint := approveHint(verify.Finding{Kind: verify.Kind(r.Kind), Tool: r.Tool}, e.approveCommandOf(&sf, &pf, args, cmd.ArgsLenAtDash())); hint != "" {
					say(e.stdout, "    %s\n", hint)
				}
			}
			instr := recordedInstructions(r, res)
			if instr != nil {
				say(e.stdout, "recorded the instructions of %s as approved:\n", r.Server)
				sayBlock(e.stdout, "    ", *instr)
			}
			if len(approved) == 0 && len(refused) == 0 && instr == nil {
				say(e.stdout, "nothing to approve: every tool of %s matches its pin\n", r.Server)
			}
			if code != exitOK {
				say(e.stderr, "etdi: not everything asked for was approved: %d refused (exit %d)\n", len(refused), code)
			}
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
	return cmd
}

func (e *env) pinRevokeCmd() *cobra.Command {
	var pf pinFlags
	var keyID, reason, policy, digest string
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
same server configured another way, SPEC.md §14.1; etdi pin list shows
them): the others stay approved, and that definition fails etdi check
with exit 14 from then on. The only approved definition of an item is
revoked with the item itself.

--key takes a full key id (sha256: and 64 hex digits), or a prefix of at
least 16 hex digits of a key the pins were signed with or the trust policy
(--trust) lists. A prefix that matches several keys or none is an error; a
full id is accepted even when no pin uses it yet, so a key can be revoked
before its tools are seen.`,
		Example: `  etdi pin revoke acme:weather/get_weather@1.0.0 --reason "CVE-2026-1234"
  etdi pin revoke unsigned:time/get_current_time --digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
  etdi pin revoke --key sha256:1a2b3c4d5e6f7a8b --reason "key leaked"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (keyID != "") {
				return usagef("give either SERVER/TOOL[@VERSION] or --key KEY_ID")
			}
			if digest != "" && keyID != "" {
				return usagef("--digest revokes one approved definition of SERVER/TOOL; it does not go with --key")
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
			if digest != "" {
				if r.Version != "" {
					return usagef("--digest names one approved definition: give SERVER/TOOL without @VERSION")
				}
				r.Digest = digest
			}
			s, err := pf.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			if digest != "" {
				if r.Item, r.Tool, err = itemOfRef(s, r.Server, r.Tool); err != nil {
					return err
				}
			}
			if keyID != "" {
				if r.KeyID, err = resolveRevokeKey(s, keyID, policy, cmd.Flags().Changed("trust")); err != nil {
					return err
				}
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
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cmd.Flags().StringVar(&keyID, "key", "", "revoke every tool signed by this key: a full id (sha256:...) or a prefix of at least 16 hex digits")
	cmd.Flags().StringVar(&policy, "trust", e.defaultTrust(), "trust policy whose key ids a --key prefix may name ($ETDI_TRUST)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the history")
	cmd.Flags().StringVar(&digest, "digest", "", "revoke only the approved definition with this digest (sha256:...), leaving the item's other variants approved")
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
