package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/idp"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/cobra"
)

func (e *env) verifyCmd() *cobra.Command {
	var policyPath, toolsPath, at, registryName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--trust POLICY] [--tools TOOLS_LIST] [--registry-name NAME] BUNDLE",
		Short: "Verify a signed bundle offline, optionally against a server's live tools",
		Long: `Verify a bundle against the trust policy: the signature must be made by a
key the policy trusts for the provider the bundle claims, the key must be
inside its validity window and the bundle inside its validity period, and
every subject digest must match its definition.

With --tools, also compare a saved tools/list result (the result object, the
whole JSON-RPC response, or an array of tools) with the signed definitions:
a live tool whose definition differs is a rug pull (exit 11) and is shown
field by field; a live tool the bundle does not sign follows the policy's
unsigned rule. Key order and whitespace never count as a difference.

With --registry-name, the bundle is checked for the MCP registry entry of
that name (io.github.acme/weather), as when it was found through a
registry: a bundle made for another entry (its server.registryName), a
name outside the namespaces the trust policy lists for the provider, or,
for an io.github.OWNER name, a keyless signer that is not a workflow of
github.com/OWNER is impersonation (exit 12; SPEC.md §4.2). Without it a
bundle that names its registry entry is held to that name.

--json prints the result with "schemaVersion": 1, "ok", "headline" and
"exitCode" (schemas/verify.schema.json).

Exit codes: 0 verified, 10 missing or invalid signature, 11 live definition
differs, 12 impersonation, 14 expired or key outside its window, 1 error.`,
		Example: `  etdi verify --trust trust.json weather.etdi.json
  etdi verify --trust trust.json --tools live.json --json weather.etdi.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now, err := parseTimeFlag("at", at)
			if err != nil {
				return err
			}
			data, err := e.readInput(args[0])
			if err != nil {
				return err
			}
			if err := notABundle(args[0], data); err != nil {
				return err
			}
			p, err := loadPolicy(policyPath)
			if err != nil {
				return err
			}
			tokens := e.tokenVerifier(now)
			if registryName != "" {
				if err := etdi.ValidateRegistryName(registryName); err != nil {
					return usagef("--registry-name: %v", err)
				}
			}
			opts := verify.Options{Now: now, Tokens: tokens, Context: e.ctx, RegistryName: registryName}
			if toolsPath != "" {
				td, err := e.readInput(toolsPath)
				if err != nil {
					return err
				}
				if opts.Live, err = etdi.ParseList(td, etdi.ListOptions{}); err != nil {
					return fmt.Errorf("%s: %w", toolsPath, err)
				}
			}
			r := verify.Verify(data, p, opts)
			if err := tokens.Unreachable(); err != nil {
				return err // operational (exit 1); the bundle was not verified
			}
			r.Source = args[0]
			code := r.ExitCode()
			headline := verifyHeadline(r, code, opts.Live != nil)
			if asJSON {
				if err := e.writeJSON(verifyOutput{jsonSchemaVersion, r, code == exitOK, headline, code}); err != nil {
					return err
				}
			} else {
				say(e.stdout, "%s\n", headline)
				printResult(e.stdout, r)
			}
			if code != exitOK {
				say(e.stderr, "etdi: verification of %s failed (exit %d)\n", args[0], code)
				return &exitCodeError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&policyPath, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	f.StringVar(&toolsPath, "tools", "", "saved tools/list result to check against the signed definitions")
	f.StringVar(&at, "at", "", "verify as of this RFC 3339 time instead of now")
	f.StringVar(&registryName, "registry-name", "", "check the bundle for the MCP registry entry of this name, e.g. io.github.acme/weather")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// tokenVerifier returns the identity provider token verifier, with its key
// cache in the user cache directory; now (if set) is the verification time.
func (e *env) tokenVerifier(now time.Time) *idp.Verifier {
	v := &idp.Verifier{Getenv: func(k string) string { s, _ := e.lookupEnv(k); return s }}
	if dir, err := os.UserCacheDir(); err == nil {
		v.Cache = idp.FileCache{Dir: filepath.Join(dir, "etdi", "jwks")}
	}
	if !now.IsZero() {
		v.Now = func() time.Time { return now }
	}
	return v
}

func loadPolicy(path string) (*trust.Policy, error) {
	p, err := trust.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &hintError{fmt.Errorf("trust policy: %w", err),
			"set etdi up with 'etdi init' (creates the policy, reviews and wraps every host's servers); or create the policy alone with 'etdi trust unsigned warn --trust " + path + "' for servers without a bundle, 'etdi trust add --trust " + path + " --provider ID --key KEY.pub' for a provider's key"}
	}
	if err != nil {
		return nil, &hintError{fmt.Errorf("trust policy: %w", err), "repair " + path + ", or remove it and run 'etdi init'"}
	}
	return p, nil
}

// verifyHeadline says in one line what holds and what does not: the
// signature may verify while the live tools differ, so "verified" alone
// never stands next to a failing exit code.
func verifyHeadline(r *verify.Result, code int, live bool) string {
	if code == exitOK {
		if live {
			return fmt.Sprintf("OK %s: signature verified; the live tools match the signed definitions", r.Source)
		}
		return fmt.Sprintf("OK %s: signature verified", r.Source)
	}
	if !r.Verified {
		return fmt.Sprintf("FAILED %s (exit %d): signature not verified", r.Source, code)
	}
	var what []string
	seen := map[string]bool{}
	for _, f := range r.Findings {
		if f.Severity != finding.Error {
			continue
		}
		phrase := failurePhrase(f.Kind)
		if !seen[phrase] {
			seen[phrase] = true
			what = append(what, phrase)
		}
	}
	return fmt.Sprintf("FAILED %s (exit %d): signature verified, but %s", r.Source, code, strings.Join(what, "; "))
}

func failurePhrase(k finding.Kind) string {
	switch k {
	case finding.DefinitionChanged:
		return "live tools differ from the signed definitions"
	case finding.Expired:
		return "the bundle is expired or not yet valid"
	case finding.KeyNotValid:
		return "the signing key is outside its validity window"
	case finding.UnsignedTool:
		return "the server serves tools no signature covers"
	case finding.NotServed:
		return "signed tools are not served"
	case finding.Impersonation:
		return "a tool is listed twice or impersonated"
	}
	return string(k)
}

// printResult writes the human report of a verification, below its
// headline.
func printResult(w io.Writer, r *verify.Result) {
	if r.Provider.ID != "" {
		claim := ""
		if !r.Verified {
			claim = " (claimed, unverified)"
		}
		name := ""
		if r.Provider.Name != "" {
			name = " (" + r.Provider.Name + ")"
		}
		say(w, "  provider  %s%s%s\n", r.Provider.ID, name, claim)
	}
	if r.Signer != nil {
		say(w, "  signer    %s\n", signerText(r.Signer))
	}
	if r.Token != nil {
		say(w, "  token     issuer %s, subject %s, expires %s\n", r.Token.Issuer, r.Token.Subject, r.Token.Expires.Format(time.RFC3339))
	}
	if r.Server.Name != "" {
		say(w, "  server    %s %s\n", r.Server.Name, r.Server.Version)
	}
	if r.IssuedAt != nil {
		say(w, "  issued    %s, expires %s, sequence %d\n",
			r.IssuedAt.Format(time.RFC3339), r.Expires.Format(time.RFC3339), r.Sequence)
	}
	if len(r.Tools) > 0 {
		say(w, "  tools     %d\n", len(r.Tools))
		width := 0
		for _, t := range r.Tools {
			width = max(width, utf8.RuneCountInString(termtext.Escape(etdi.SubjectName(t.Name, t.Version))))
		}
		for _, t := range r.Tools {
			var scopes []string
			for _, p := range t.Permissions {
				scopes = append(scopes, p.Scope)
			}
			perm := "no permissions"
			if len(scopes) > 0 {
				perm = strings.Join(scopes, ", ")
			}
			status := ""
			if t.Status != verify.StatusSigned {
				status = "  [" + string(t.Status) + "]"
			}
			d, _ := etdi.ParseDigest(t.Digest)
			say(w, "    %-*s  sha256:%s  %s%s\n", width, etdi.SubjectName(t.Name, t.Version), d.Short(), perm, status)
		}
	}
	printFindings(w, r.Findings)
}

func printFindings(w io.Writer, findings []finding.Finding) { printFindingsWith(w, findings, nil) }

// printFindingsWith prints findings; for a new tool whose definition is in
// defs, everything approving it grants (describeTool).
func printFindingsWith(w io.Writer, findings []finding.Finding, defs map[string]observedTool) {
	printFindingsFor(w, findings, defs, "")
}

// printFindingsFor is printFindingsWith that, given approve (the etdi pin
// approve command of the server checked, approveCommand), says under a
// name collision, a shadowing, a look-alike name and a change from the
// same artifact under another name the exact command that approves that
// tool.
func printFindingsFor(w io.Writer, findings []finding.Finding, defs map[string]observedTool, approve string) {
	for _, f := range findings {
		say(w, "%s: %s: %s\n", levelOf(f).Label, f.Kind, f.Message)
		if hint := approveHint(f, approve); hint != "" {
			say(w, "    %s\n", hint)
		}
		if f.Signed != "" && f.Live != "" {
			say(w, "    signed %s\n    live   %s\n", f.Signed, f.Live)
		}
		if f.Kind == finding.NewTool {
			say(w, "    approval grants: %s\n", permList(f.Permissions))
		}
		if d, ok := defs[pin.ItemRef(f.Item, f.Tool)]; ok && (f.Kind == finding.NewTool || f.Kind == finding.Shadowing || f.Kind == finding.ConfusableName) {
			describeTool(w, d.canonical, d.permissions)
		}
		if f.Pointer != "" {
			say(w, "    at %s: %s\n", f.Pointer, f.Match)
		}
		for _, p := range f.PermissionsAdded {
			say(w, "    + permission %s\n", permList([]etdi.Permission{p}))
		}
		for _, p := range f.PermissionsRemoved {
			say(w, "    - permission %s\n", permList([]etdi.Permission{p}))
		}
		for _, c := range f.Changes {
			say(w, "    %s\n", c)
		}
	}
}

// signerText names a verified signer for a person: the key, or the
// keyless signer's identity and issuer, with when the log recorded it.
func signerText(s *verify.SignerIdentity) string {
	if ks := s.Sigstore; ks != nil {
		return fmt.Sprintf("keyless %s (issuer %s, logged at %s, entry %d)", ks.Identity, ks.Issuer, ks.SignedAt.Format(time.RFC3339), ks.LogIndex)
	}
	return fmt.Sprintf("key %s (%s)", keys.ShortID(s.KeyID), s.Algorithm)
}

// approveHint is the line under a finding about a tool name another
// server has approved (or a change of the same artifact's tool under
// another name) that says the exact command approving the tool, or "".
func approveHint(f finding.Finding, approve string) string {
	if approve == "" || f.Tool == "" {
		return ""
	}
	cmd := approve + " --tool " + termtext.ShellQuote(pin.ItemRef(f.Item, f.Tool))
	switch {
	case f.Kind == finding.NameCollision:
		return "approve it as a new tool: " + cmd
	case f.Kind == finding.Shadowing || f.Kind == finding.ConfusableName:
		return "if you know this server's tool is not posing as the other, approve it by name: " + cmd
	case f.Kind == finding.RugPull && len(f.Servers) > 0:
		return "if the change is expected, approve it by name: " + cmd
	}
	return ""
}

// approveCommand is the etdi pin approve command, as it must be typed in
// any directory, that approves what etdi check found of t with the same
// trust policy, pin store and inputs (add --tool NAME); "" when it cannot
// be written out exactly: a lockfile is read-only, and a command line,
// URL, header or VS Code input holding a secret is not printed.
func approveCommand(sf *serverFlags, pf *pinFlags, t *target) string {
	if pf.lock != "" || len(sf.inputs) > 0 || len(t.Header) > 0 {
		return ""
	}
	q := termtext.ShellQuote
	pins := pf.path
	if !strings.Contains(pins, "://") {
		pins = absPath(pins)
	}
	parts := []string{"etdi", "pin", "approve", "--trust", q(absPath(sf.policy)), "--pins", q(pins)}
	if sf.bundle != "" {
		parts = append(parts, "--bundle", q(absPath(sf.bundle)))
	}
	switch {
	case t.Entry != nil:
		parts = append(parts, "--config", q(absPath(t.location)), "--name", q(t.Name))
	case t.toolsFile != "":
		parts = append(parts, "--tools", q(absPath(t.toolsFile)))
		if sf.name != "" {
			parts = append(parts, "--name", q(sf.name))
		}
	case t.URL != "":
		if t.Secrets.String(t.URL) != t.URL {
			return ""
		}
		parts = append(parts, "--url", q(t.URL))
		if sf.name != "" {
			parts = append(parts, "--name", q(sf.name))
		}
	case len(t.Command) > 0:
		if sf.name != "" {
			parts = append(parts, "--name", q(sf.name))
		}
		parts = append(parts, "--server", "--")
		for _, a := range t.Command {
			if t.Secrets.String(a) != a {
				return ""
			}
			parts = append(parts, q(a))
		}
		// The command line is read where check ran.
		if wd, err := os.Getwd(); err == nil {
			return "cd " + q(wd) + " && " + strings.Join(parts, " ")
		}
	default:
		return ""
	}
	return strings.Join(parts, " ")
}

// approveCommandOf is approveCommand of the one server the flags and
// arguments select, "" when they select no one server.
func (e *env) approveCommandOf(sf *serverFlags, pf *pinFlags, args []string, dash int) string {
	ts, err := e.targets(sf, args, dash)
	if err != nil || len(ts) != 1 {
		return ""
	}
	return approveCommand(sf, pf, &ts[0])
}
