package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cedarFlags are the flags that name the call-time policies: the trust
// policy's cedar member, and --cedar files added to it.
type cedarFlags struct {
	files []string
}

func (c *cedarFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.files, "cedar", nil, "Cedar call-time policy file, added to those the trust policy names (repeatable; docs/policies.md#call-time-policies)")
}

// load returns the policies of the trust policy (loaded from trustPath)
// and of --cedar, validated; nil when there are none. A file that does
// not load is an error: a gate never starts open.
func (c *cedarFlags) load(trustPath string, tp *trust.Policy) (*policy.Set, error) {
	var files []string
	if tp != nil {
		files = tp.CedarFiles(trustPath)
	}
	files = append(files, c.files...)
	if len(files) == 0 {
		return nil, nil
	}
	set, err := policy.LoadFiles(files...)
	if err != nil {
		return nil, &hintError{err, "check a policy file with: etdi policy validate FILE (the schema: etdi policy schema)"}
	}
	return set, nil
}

// review is the policy test command for what a gate refuses, with the
// files it was given, by absolute path.
func (c *cedarFlags) review(cmd *cobra.Command) string {
	parts := []string{"etdi policy test"}
	for _, fl := range []string{"trust", "pins"} {
		if f := cmd.Flags().Lookup(fl); f != nil && f.Changed {
			parts = append(parts, "--"+fl+" "+termtext.ShellQuote(absPath(f.Value.String())))
		}
	}
	for _, f := range c.files {
		parts = append(parts, "--cedar "+termtext.ShellQuote(absPath(f)))
	}
	return strings.Join(parts, " ")
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func (e *env) policyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Write and test Cedar call-time policies: what approved tools may do",
		Long: `Call-time policies decide, for every tools/call that reaches etdi run's
gate, whether the call goes ahead, is put to the person first, or is
refused (docs/policies.md#call-time-policies). They are Cedar policies over etdi's schema:

  principal  Etdi::Host::"<clientInfo.name>"
  action     Etdi::Action::"call"
  resource   Etdi::Tool::"<server>/<tool>" with server, name, version,
             provider, signed, scopes (approved; "net:fetch" also gives
             "net:*") and annotations (a signed tool's only)
  context    sessionScopes, callsThisMinute, callsOfThisTool,
             argumentsDigest

Every policy needs an @id("...") annotation: blocked calls and the history
name it. A forbid policy annotated @ask("reason") asks the person instead
(through the host's elicitation; a host that cannot ask refuses). A call
no permit policy matches is refused, as Cedar does: start a file with

  @id("baseline")
  permit (principal, action == Etdi::Action::"call", resource);

Give the files to etdi run, check and pin approve with --cedar FILE, or
name them in the trust policy (etdi trust cedar FILE) so they travel with
it. Examples: examples/policies/.`,
	}
	cmd.AddCommand(e.policyTestCmd(), e.policyValidateCmd(), e.policySchemaCmd())
	return cmd
}

func (e *env) policySchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print etdi's Cedar schema, against which every policy is validated",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprint(e.stdout, policy.Schema)
			return nil
		},
	}
}

func (e *env) policyValidateCmd() *cobra.Command {
	var asJSON, strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Validate Cedar policy files against etdi's schema and list their policies",
		Long: `Parse the files and validate every policy against etdi's schema, strictly,
as etdi run does before it starts: a syntax error, an attribute the schema
does not declare, an optional annotation read without "has", a policy
without @id, an @id used twice, an @ask on a permit, or a file without a
policy is an error (exit 1). Otherwise each policy is listed: its id,
effect, @ask reason, and whether it reads the session (context).

A valid set that would forbid every tool call is warned about, with the
permit to add: no permit at all (forbid rules only take away), permits
for other actions only, or permits whose conditions are always false
(when { false }). The exit code stays 0 for a warning; with --strict a
warning exits 1, for CI. --json lists the warnings under "warnings".`,
		Example: `  etdi policy validate examples/policies/exfiltration.cedar`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := policy.LoadFiles(args...)
			if err != nil {
				return err
			}
			warnings := set.Warnings()
			fail := func() error {
				if strict && len(warnings) > 0 {
					say(e.stderr, "etdi: %d warnings with --strict (exit 1)\n", len(warnings))
					return &exitCodeError{exitError}
				}
				return nil
			}
			if asJSON {
				if warnings == nil {
					warnings = []string{}
				}
				if err := e.writeJSON(struct {
					Files    []string      `json:"files"`
					Policies []policy.Rule `json:"policies"`
					Warnings []string      `json:"warnings"`
				}{set.Files(), set.Policies(), warnings}); err != nil {
					return err
				}
				return fail()
			}
			for _, p := range set.Policies() {
				line := fmt.Sprintf("%-7s %s", p.Effect, p.ID)
				if p.Ask != "" {
					line += fmt.Sprintf(" (ask: %s)", p.Ask)
				}
				if p.Session {
					line += " [reads the session]"
				}
				say(e.stdout, "%s  %s\n", line, p.Position)
			}
			for _, w := range warnings {
				say(e.stderr, "WARNING: %s\n", w)
			}
			if len(warnings) > 0 {
				say(e.stdout, "OK with %d warnings: %d policies valid against etdi's schema\n", len(warnings), len(set.Policies()))
			} else {
				say(e.stdout, "OK: %d policies valid against etdi's schema\n", len(set.Policies()))
			}
			return fail()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the policies as JSON")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when there is a warning (a set that would forbid every call)")
	return cmd
}

// policyTestFlags are the flags of etdi policy test.
type policyTestFlags struct {
	trust, tool, host, arguments, expect string
	sessionScopes                        []string
	callsThisMinute, callsOfThisTool     int64
	json                                 bool
}

func (e *env) policyTestCmd() *cobra.Command {
	var f policyTestFlags
	var cf cedarFlags
	var pf pinFlags
	cmd := &cobra.Command{
		Use:   "test --tool SERVER/TOOL [--session-scopes S,...] [--calls-this-minute N] [--arguments JSON]",
		Short: "Decide one call offline: would the policies allow, ask or forbid it",
		Long: `Evaluate the call-time policies for one call of an approved tool, as etdi
run would, without a server: the tool is read from the pin database (its
approved version, provider, signer, scopes and annotations), the session
from the flags. Prints the decision (allow, ask or forbid), the policies
that decided it and the @ask reasons.

The policies are those the trust policy names and those of --cedar.
--expect allow|ask|forbid makes the exit code 1 when the decision differs,
for a policy author's tests in CI. Exit 0 otherwise; 1 for an error (no
policies, a policy that does not validate, no such pin); 2 usage.`,
		Example: `  etdi policy test --cedar examples/policies/exfiltration.cedar --tool acme:weather/get_weather --session-scopes files:read
  etdi policy test --tool acme:files/delete --expect ask --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.policyTest(cmd, &f, &cf, &pf)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trust, "trust", e.defaultTrust(), "trust policy file, whose cedar member names policy files ($ETDI_TRUST; not needed with --cedar)")
	cf.register(fl)
	pf.register(fl, e)
	fl.StringVar(&f.tool, "tool", "", "the approved tool, SERVER/TOOL as etdi pin list shows it (required)")
	fl.StringVar(&f.host, "host", "", "the host's clientInfo.name (the principal)")
	fl.StringSliceVar(&f.sessionScopes, "session-scopes", nil, "scopes of the tools already called in the session (comma-separated or repeated)")
	fl.Int64Var(&f.callsThisMinute, "calls-this-minute", 0, "calls the session made in the last minute")
	fl.Int64Var(&f.callsOfThisTool, "calls-of-this-tool", 0, "calls of this tool the session made")
	fl.StringVar(&f.arguments, "arguments", "", "the call's arguments, a JSON object (its digest is the context's argumentsDigest)")
	fl.StringVar(&f.expect, "expect", "", "allow, ask or forbid: exit 1 when the decision differs")
	fl.BoolVar(&f.json, "json", false, "print the decision as JSON")
	return cmd
}

func (e *env) policyTest(cmd *cobra.Command, f *policyTestFlags, cf *cedarFlags, pf *pinFlags) error {
	switch f.expect {
	case "", "allow", "ask", "forbid":
	default:
		return usagef("--expect %q: want allow, ask or forbid", f.expect)
	}
	if f.tool == "" {
		return usagef("--tool SERVER/TOOL is required")
	}
	server, name, _, err := pin.ParseRef(f.tool)
	if err != nil {
		return &usageError{fmt.Errorf("--tool: %w", err)}
	}
	var args []byte
	if f.arguments != "" {
		if !json.Valid([]byte(f.arguments)) {
			return usagef("--arguments: not JSON")
		}
		args = []byte(f.arguments)
	}
	var tp *trust.Policy
	// The trust policy's files count whenever there is a trust policy; it
	// is needed only without --cedar.
	if _, statErr := os.Stat(f.trust); len(cf.files) == 0 || cmd.Flags().Changed("trust") || statErr == nil {
		if tp, err = loadPolicy(f.trust); err != nil {
			return err
		}
	}
	set, err := cf.load(f.trust, tp)
	if err != nil {
		return err
	}
	if set == nil {
		return &hintError{errors.New("no call-time policies: the trust policy names none and no --cedar was given"),
			"give a policy file with --cedar FILE, or name it in the trust policy: etdi trust cedar FILE"}
	}
	s, err := pf.open(true)
	if err != nil {
		return err
	}
	p, err := s.Get(server, name)
	s.Close()
	if err != nil {
		return err
	}
	if p == nil {
		return &hintError{fmt.Errorf("no approved tool %s in %s", f.tool, pf.path), "list the approved tools with: etdi pin list"}
	}
	t := policy.ToolOfPin(p)
	d := set.Authorize(policy.Request{Host: f.host, Tool: t, Context: policy.Context{
		SessionScopes: f.sessionScopes, CallsThisMinute: f.callsThisMinute, CallsOfThisTool: f.callsOfThisTool,
		ArgumentsDigest: policy.ArgumentsDigest(args)}})
	if f.json {
		if err := e.writeJSON(struct {
			Tool string `json:"tool"`
			policy.Decision
		}{p.Ref(), d}); err != nil {
			return err
		}
	} else {
		say(e.stdout, "%s: %s\n", p.Ref(), d.Summary())
		for i, r := range d.Reasons {
			say(e.stdout, "  ask: %s (policy %s)\n", r, d.Policies[i])
		}
		for _, er := range d.Errors {
			say(e.stdout, "  evaluation error: %s\n", er)
		}
	}
	if f.expect != "" && f.expect != d.Effect.String() {
		say(e.stderr, "etdi: expected %s, the policies decide %s\n", f.expect, d.Effect)
		return &exitCodeError{exitError}
	}
	return nil
}
