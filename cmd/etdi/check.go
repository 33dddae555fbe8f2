package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/colour"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// checkReport is what etdi check found for one server, as prose or JSON.
type checkReport struct {
	Target       string            `json:"target"`
	Server       string            `json:"server,omitempty"`
	Verification *verify.Result    `json:"verification,omitempty"`
	Tools        []pin.ToolState   `json:"tools"`
	Findings     []finding.Finding `json:"findings"`
	// Approved lists what --yes or --approve approved.
	Approved []pin.Approval `json:"approved,omitempty"`
	// InstructionsRecorded are the server's instructions when --yes or
	// --approve recorded them as approved (a first approval, or accepted).
	InstructionsRecorded *string `json:"instructionsRecorded,omitempty"`
	// Calls is what the call-time policies decide of each tool's first
	// call in a session (with --cedar or the trust policy's cedar member).
	Calls []guard.CallDecision `json:"calls,omitempty"`
	// Disabled is set for a host configuration entry turned off in its
	// file; HostHonoursDisabled says whether its host keeps it from
	// starting (yes: it is not checked; no or unknown: it is checked,
	// as the host may start it). docs/hosts.md#host-configuration-files.
	Disabled            bool   `json:"disabled,omitempty"`
	HostHonoursDisabled string `json:"hostHonoursDisabled,omitempty"`
	// Program is the program the host starts for the entry, found as
	// the host finds it (the entry's env PATH, else the host's).
	Program string `json:"program,omitempty"`
	// Ignored are members of the entry naming another server that the
	// host ignores (Gemini CLI's command beside httpUrl or url).
	Ignored []string `json:"ignored,omitempty"`
	// Wrapped says the entry runs its server through the user's own etdi
	// run, proven (docs/hosts.md#wrapping-host-configurations): the server checked is the one behind it.
	// Always present: false for everything else.
	Wrapped bool `json:"wrapped"`
	// Registry is the registry entry checked (--registry).
	Registry *registryCheck `json:"registry,omitempty"`
	// Error is why the server could not be checked (exit 1).
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
	// location and line are the file (and line) SARIF locates the
	// server's results at; name is the name it was checked under.
	location string
	line     int
	name     string
	// session are the ids of the policies that read the session: Calls
	// are the first call's, and later calls may be decided otherwise.
	session []string
	// approve is the etdi pin approve command of the server, as it must
	// be typed (approveCommand).
	approve string
	// defs are the offered tools' definitions, for the prose report.
	defs map[string]observedTool
	// guarded is the server's report as compared with the pins (nil when
	// it was not compared): what etdi review decides on.
	guarded *guard.Report
}

// blockedUnsigned reports whether a server was blocked only because the
// trust policy blocks unsigned tools.
func blockedUnsigned(reps []*checkReport) bool {
	for _, r := range reps {
		for _, f := range r.Findings {
			if f.Kind == finding.UnsignedTool && f.Severity == finding.Error {
				return true
			}
		}
	}
	return false
}

// checkOutput is the whole result of etdi check.
type checkOutput struct {
	// SchemaVersion is the version of this output's shape (docs/output.md#sarif-and-json-output,
	// schemas/check.schema.json).
	SchemaVersion int            `json:"schemaVersion"`
	Servers       []*checkReport `json:"servers"`
	Summary       checkSummary   `json:"summary"`
	ExitCode      int            `json:"exitCode"`
}

// checkHelp is the long help of etdi check.
const checkHelp = `Check what a server offers against the trust policy and the pin database,
before the server is launched.

The tools come from a live server (--server -- CMD..., started over stdio;
--url, Streamable HTTP; --config, every server of a host configuration, or
all found with --config auto; --registry URL SERVER[@VERSION], a server an
MCP registry lists; --mcpb FILE, an MCPB file) or from a saved tools/list
(--tools). The bundle comes from --bundle or, if the server carries one,
from its tools/list _meta. With a verified bundle the server is known as
<provider>:<server>; without one as unsigned:<name> (--name, the config
entry name, or the program name), the policy's unsigned rule applies, and
its tools are pinned by digest, so a changed definition is still caught.

--registry URL NAMESPACE/NAME[@VERSION] (the latest without @VERSION)
reads the entry from the registry's API and starts the server as a host
installs it from server.json: the first package etdi starts (npm, PyPI,
OCI, NuGet) or the one --package N chooses, with its runtime hint,
arguments and environment, or the remote --remote N chooses, with its
headers. --input NAME=VALUE gives a value for an input of the entry (an
environment variable, header, argument or URL variable); a required one
not given is an error naming it. A runner that is not the package type's,
an identifier a runner would read as an option, or a deleted entry is
refused before anything starts. The bundle is the one the entry names in
_meta (dev.etdi): fetched over https (http only from a loopback host), it
must be the file of the entry's digest, else bundle_invalid (10) and
nothing starts; verified, it must name the entry (server.registryName)
and bind the package or remote checked (server.artifacts,
server.endpoints), else impersonation (12). An entry without dev.etdi is
unsigned and pinned as unsigned:NAMESPACE/NAME (or --name). A deprecated
entry is checked, with a note (docs/registry.md#client-checking-and-installing-from-a-registry).

A live server is listed declaring the client capabilities of the host that
will use it (docs/hosts.md#how-each-host-reads-an-entry: with --config, what the entry's host declares;
otherwise none), as servers offer some tools only to clients with roots,
sampling or elicitation; --capabilities roots,sampling,elicitation (or
none) declares those instead.

Every tool is compared with its pin: a tool never approved, or a higher
version, needs approval (13); the same version with another definition or
other permissions, changed server instructions, a lower version or an
older bundle is a rug pull or downgrade (11); another signer, a name
approved on another server or one that looks like an approved name is
impersonation (12); a revoked tool, version or key is 14. Error and warning
findings are appended to the history, each once until the next approval
or revocation of its tool; the unsigned_tool warning of a tool approved
as observed never is (docs/storage.md#history-and-checkpoints). A server that cannot be checked is
an error (1) unless another server has a security finding.

--mcpb FILE reads the MCPB file as hostile input (bounded; no entry
outside the archive, no link), verifies the signature mcpb sign appended
when there is one and says who signed ("signed by CN=... (self-signed)";
one that does not verify is mcpb_signature_invalid, 10; an unsigned file
is said, not an error), extracts it into a private directory and starts
its server as the desktop host does from manifest.json's
server.mcp_config (--mcpb-config KEY=VALUE gives a user_config value).
The served tools are then checked as any server's (under --name, else the
MCPB's name), the file is the artifact a bundle must bind (type mcpb,
its SHA-256), and a served tool manifest.json does not declare
(mcpb_undeclared_tool; a warning when it says tools_generated) or
declares with another description (mcpb_tool_mismatch) is 11
(docs/registry.md#mcpb-files).

--yes approves what etdi pin approve would (new tools and versions) and
prints it; --approve asks about each new or changed tool on a terminal.

With call-time policies (--cedar FILE, or the trust policy's cedar member;
docs/policies.md#call-time-policies) each tool's line says what they decide of its first call in a
session (allow, ask or forbid, and which policy), and so does --approve
for each tool it asks about; --json has them under "calls".

A server that needs nothing is one line: "ok", its name (host and
file), who vouches for it (provider and signer, or "unsigned, allowed by
policy"; its unsigned tools are said once, not a warning each) and how
many tools it offers. A server that needs a decision or has a warning
is shown in full: every tool with its digest and status, and every
finding. -v (--verbose) shows every server in full. --quiet prints only
errors: each server that is not ok under its heading, with its error or
its error findings, and the summary line unless every server is ok; a
run that exits 0 prints nothing. --json (with a "summary" member) and
--sarif are unchanged by --quiet and -v. On a terminal the states are
coloured, unless NO_COLOR is set; --color always or never decides.

Checking more than one server ends with one summary line on standard
error, e.g. "etdi: 3 servers: 1 ok, 1 needs approval, 1 blocked, 0 not
checked": blocked is a security finding (exit 10, 11, 12 or 14), not
checked an operational error (1).

--sarif prints SARIF 2.1.0 for GitHub code scanning (docs/output.md#sarif-and-json-output): one
result per error or warning finding and per server not checked, the
unsigned_tool warnings of a server as one result (so a server approved
and unchanged has none, or that one when its tools are unsigned), each
located at a file relative to the repository root (--sarif-root, default
the working directory): the configuration file at the entry's line, the
saved listing, the bundle, or for a live server without --bundle the trust
policy; a file outside the root as an absolute file:// URI. Fingerprints
follow the finding (server, tool, kind), so an alert stays one alert from
run to run. --json carries "schemaVersion": 1 (schemas/check.schema.json).

--exit-zero exits 0 once the report is printed, whatever it found, for a
CI step that uploads the SARIF and lets code scanning (or a later step)
decide; a usage error still exits 2, and an error before any report (no
trust policy, no configuration) keeps its code.

--lock FILE checks against a team lockfile (etdi pin export --lock;
docs/fleets.md#team-lockfile) instead of a pin database, read-only: every check is the
same, but nothing is written (no finding recorded, no file created), and
--yes and --approve are refused; --pins cannot be combined with it. With
--lock-key KEY (the audit verifier key, or a file holding it) the
lockfile must be signed by that key: an unsigned or tampered lockfile
exits 10 before anything is checked, one of a lower generation than a
lockfile of that key accepted before (remembered in lock-generations.json
beside the user's configuration) exits 11, and an expired one 14.`

func (e *env) checkCmd() *cobra.Command {
	var f checkFlags
	sf, pf, cf, lf := &f.sf, &f.pf, &f.cf, &f.lf
	cmd := &cobra.Command{
		Use:   "check (--tools FILE | --server -- CMD... | --url URL | --config FILE|auto | --registry URL SERVER[@VERSION] | --mcpb FILE | --bundle BUNDLE)",
		Short: "Check a server's tools against the trust policy and the approved pins",
		Long:  checkHelp,
		Example: `  etdi check --trust trust.json --pins pins.db --bundle weather.etdi.json --tools live.json
  etdi check --server -- node server.js --flag
  etdi check --url http://127.0.0.1:3001/mcp --header "Authorization: Bearer $TOKEN"
  etdi check --config ~/.cursor/mcp.json --name weather
  etdi check --config auto --sarif > etdi.sarif
  etdi check --registry https://registry.modelcontextprotocol.io io.github.acme/weather@1.2.0 --input WEATHER_API_KEY="$KEY"
  etdi check --mcpb weather.mcpb --mcpb-config api_key=$KEY
  etdi check --config .cursor/mcp.json --sarif --exit-zero > etdi.sarif   # in CI, before upload-sarif
  etdi check --lock .etdi/etdi.lock.json --lock-key .etdi/audit.pub --config .vscode/mcp.json   # CI: the team's approvals, read-only`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.runCheck(cmd, &f, args)
		},
	}
	sf.register(cmd.Flags(), e)
	sf.registerRegistry(cmd.Flags())
	registerMCPB(cmd.Flags(), sf)
	cmd.Flags().StringVar(&sf.etdi, "etdi", "", "with --config: another etdi program of yours; entries that run it (or this etdi) through etdi run count as wrapped, and no other program named etdi does")
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	cf.register(cmd.Flags())
	lf.register(cmd.Flags(), lockHelp)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&f.asSARIF, "sarif", false, "print the findings as SARIF 2.1.0, for code scanning")
	cmd.Flags().StringVar(&f.sarifRoot, "sarif-root", "", "with --sarif: the repository root that result locations are relative to (default: the working directory)")
	cmd.Flags().BoolVar(&f.exitZero, "exit-zero", false, "exit 0 once the report is printed, whatever it found (usage errors still exit 2); for CI steps that upload SARIF and gate elsewhere")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "approve new tools and new versions without asking, and print what was approved")
	cmd.Flags().BoolVar(&f.interactive, "approve", false, "on a terminal, show each new or changed tool and ask whether to approve it")
	cmd.Flags().BoolVar(&f.acceptInstructions, "accept-instructions", false, "with --yes: also accept changed server instructions")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the servers that are not ok, their errors, and the summary")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "print every server in full: every tool with its digest and status, and every finding")
	cmd.Flags().StringVar(&f.colourFlag, "color", "auto", "colour the report: auto (on a terminal, unless NO_COLOR is set), always or never")
	return cmd
}

// checkFlags are the flags of etdi check.
type checkFlags struct {
	sf                                                                              serverFlags
	pf                                                                              pinFlags
	cf                                                                              cedarFlags
	lf                                                                              lockFlags
	asJSON, asSARIF, yes, interactive, acceptInstructions, quiet, verbose, exitZero bool
	sarifRoot, colourFlag                                                           string
}

// runCheck checks every server the flags name, prints the report and
// ends with its exit code.
func (e *env) runCheck(cmd *cobra.Command, f *checkFlags, args []string) error {
	view, so, err := e.checkOutputFlags(cmd, f)
	if err != nil {
		return err
	}
	sf, pf := &f.sf, &f.pf
	sf.gatePins, sf.gateLock, sf.gateCedar = pf.path, f.lf.path, f.cf.files
	remove, err := e.useLock(cmd, &f.lf, pf)
	if err != nil {
		return err
	}
	defer remove()
	e.quiet = f.quiet
	raiseMemoryLimit()
	sf.launchApproved = pf.launchChecker()
	ts, err := e.targets(sf, args, cmd.ArgsLenAtDash())
	if err != nil {
		return err
	}
	defer removeMCPB(ts)
	p, err := loadPolicy(sf.policy)
	if err != nil {
		return err
	}
	set, err := f.cf.load(sf.policy, p)
	if err != nil {
		return err
	}
	out := &checkOutput{SchemaVersion: jsonSchemaVersion, Servers: []*checkReport{}}
	for i := range ts {
		rep := e.checkTarget(sf, pf, &ts[i], p, set, f.yes, f.interactive, f.acceptInstructions)
		addConfigFindings(rep, &ts[i])
		out.Servers = append(out.Servers, rep)
	}
	out.ExitCode = combineExit(out.Servers)
	out.Summary = summarize(out.Servers)
	if sf.project && pf.lock == "" {
		e.approveLaunches(pf, ts, func(i int) (string, bool) {
			return out.Servers[i].Server, out.Servers[i].ExitCode == exitOK
		})
	}
	switch {
	case f.asJSON:
		err = e.writeJSON(out)
	case f.asSARIF:
		err = e.writeJSON(sarifLog(out, so))
	default:
		printChecks(e.stdout, out.Servers, view)
	}
	if err != nil {
		return err
	}
	return e.checkExit(f, out)
}

// checkOutputFlags checks the flags of etdi check that combine, and
// returns how the report is printed.
func (e *env) checkOutputFlags(cmd *cobra.Command, f *checkFlags) (checkView, sarifOptions, error) {
	var so sarifOptions
	if f.asJSON && f.asSARIF {
		return checkView{}, so, usagef("--json and --sarif cannot be combined")
	}
	if cmd.Flags().Changed("sarif-root") && !f.asSARIF {
		return checkView{}, so, usagef("--sarif-root applies to --sarif output")
	}
	if f.asSARIF {
		var err error
		if so, err = newSarifOptions(f.sarifRoot, f.sf.policy); err != nil {
			return checkView{}, so, err
		}
	}
	if f.yes && f.interactive {
		return checkView{}, so, usagef("--yes and --approve cannot be combined")
	}
	if f.quiet && f.verbose {
		return checkView{}, so, usagef("--quiet and --verbose cannot be combined")
	}
	view := checkView{quiet: f.quiet, verbose: f.verbose}
	mode, err := colour.ParseMode(f.colourFlag)
	if err != nil {
		return checkView{}, so, usagef("%v", err)
	}
	view.paint = colour.New(colour.Enabled(mode, e.stdoutIsTerminal(), e.lookupEnv))
	if f.lf.path != "" && f.yes {
		return checkView{}, so, readOnlyLock("--yes")
	}
	if f.lf.path != "" && f.interactive {
		return checkView{}, so, readOnlyLock("--approve")
	}
	if f.interactive && !e.stdinIsTerminal() {
		return checkView{}, so, usagef("--approve asks questions and needs a terminal; use --yes in scripts")
	}
	return view, so, nil
}

// checkExit says on standard error what the exit code of etdi check
// means and how to go on, and ends with it (0 with --exit-zero).
func (e *env) checkExit(f *checkFlags, out *checkOutput) error {
	switch out.ExitCode {
	case exitOK:
	case exitApproval:
		if f.pf.lock != "" {
			say(e.stderr, "etdi: approval required (exit 13): the lockfile %s does not approve the tools above; approve them into a pin database and write the lockfile again (etdi pin export --lock)\n", f.pf.lock)
			break
		}
		if f.sf.reg.url != "" { // etdi pin approve reads no registry
			say(e.stderr, "etdi: approval required (exit 13): review the tools above, then check again with --yes, or with --approve%s\n", instructionsHint(out.Servers))
			break
		}
		say(e.stderr, "etdi: approval required (exit 13): review the tools above, then run etdi pin approve with the same inputs, or check again with --approve%s\n", instructionsHint(out.Servers))
	default:
		say(e.stderr, "etdi: check failed (exit %d)\n", out.ExitCode)
	}
	if blockedUnsigned(out.Servers) {
		fmt.Fprintf(e.stderr, "etdi: hint: a server without a signed bundle is blocked by the trust policy (unsigned: block, the default).\n"+
			"etdi: hint: to review and pin unsigned servers by digest instead, with a warning on each check: etdi trust unsigned warn --trust %s\n", f.sf.policy)
	}
	if len(out.Servers) > 1 && !(f.quiet && out.ExitCode == exitOK) {
		say(e.stderr, "etdi: %s\n", out.Summary)
	}
	if out.ExitCode != exitOK && f.exitZero {
		say(e.stderr, "etdi: exiting 0 instead of %d (--exit-zero)\n", out.ExitCode)
		return nil
	}
	if out.ExitCode != exitOK {
		return &exitCodeError{out.ExitCode}
	}
	return nil
}

// stdoutIsTerminal reports whether standard output is a terminal.
func (e *env) stdoutIsTerminal() bool {
	f, ok := e.stdout.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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
func (e *env) checkTarget(sf *serverFlags, pf *pinFlags, t *target, p *trust.Policy, set *policy.Set, yes, interactive, acceptInstructions bool) *checkReport {
	rep := &checkReport{Target: t.Label, Tools: []pin.ToolState{}, Findings: []finding.Finding{}, location: t.location, line: t.line, name: t.Name,
		approve: approveCommand(sf, pf, t)}
	fail := func(err error) *checkReport {
		var ue *pin.UnjustifiedError
		if errors.As(err, &ue) { // a pin database the history does not justify
			rep.Error, rep.ExitCode = err.Error(), exitSignature
			return rep
		}
		rep.Error, rep.ExitCode = err.Error(), exitError
		return rep
	}
	if entryChecked(rep, t) {
		return rep
	}
	if done, err := e.registryChecked(rep, sf, pf, t, p); err != nil || done {
		if err != nil {
			return fail(e.guardError(err))
		}
		return rep
	}
	if len(t.Problems) > 0 {
		return fail(fmt.Errorf("not checked: %s", strings.Join(t.Problems, "; ")))
	}
	r, err := e.observe(sf, pf, t, p, true)
	if err != nil {
		return fail(err)
	}
	rep.Verification = r.Verification
	if r.Blocked() {
		rep.Findings = append(rep.Findings, r.Findings...)
		rep.ExitCode = r.ExitCode()
		return rep
	}
	if rep.Calls = guard.CallDecisions(r, set, ""); set != nil {
		for _, p := range set.Policies() {
			if p.Session {
				rep.session = append(rep.session, p.ID)
			}
		}
	}
	rep.defs = toolDefs(r.Observation, rep.Calls)
	after := r
	switch {
	case interactive && !hasError(r.Observed()) && !t.mcpb.blocks(t):
		var res *guard.ApproveResult
		if after, res, err = e.approveInteractively(r, rep.Calls); err == nil && res != nil {
			rep.Approved = res.Approved
			rep.InstructionsRecorded = recordedInstructions(r, res)
		}
	case yes && !hasError(r.Observed()) && !t.mcpb.blocks(t):
		var res *guard.ApproveResult
		if res, err = guard.Approve(e.ctx, r, guard.ApproveOptions{AcceptInstructions: acceptInstructions,
			Review: func(c *pin.Comparison) bool {
				if acceptInstructions {
					printInstructionFindings(e.stderr, c)
				}
				return true
			}}); err == nil {
			rep.Approved, after = res.Approved, r.After(res.Comparison)
			rep.InstructionsRecorded = recordedInstructions(r, res)
		}
	}
	if err == nil && len(after.Unserved()) > 0 && pf.lock == "" {
		var recorded []pin.Approval
		recorded, after, err = e.recordServed(after, t, yes, interactive)
		rep.Approved = append(rep.Approved, recorded...)
	}
	if err != nil {
		return fail(e.guardError(err))
	}
	rep.Server, rep.Tools, rep.guarded = after.Server, after.Tools, after
	rep.Findings = after.Since(r)
	rep.ExitCode = exitFor(rep.Findings)
	return rep
}

// entryChecked puts what a host configuration entry says of its server
// into rep, and reports whether that is all there is to check: the host
// does not start the server, or etdi does not (entryFinding).
func entryChecked(rep *checkReport, t *target) bool {
	en := t.Entry
	if en == nil {
		return false
	}
	rep.Wrapped = en.Wrapped
	if en.Disabled {
		rep.Disabled, rep.HostHonoursDisabled = true, string(en.HostHonoursDisabled)
	}
	rep.Program, rep.Ignored = t.Secrets.String(en.Program), en.Ignored
	if en.NotStarted() {
		return true // the host does not start it: nothing to check
	}
	if f := entryFinding(en, &t.Secrets); f != nil {
		rep.Findings = append(rep.Findings, *f)
		rep.ExitCode = exitFor(rep.Findings)
		return true
	}
	return false
}

// entryFinding is the finding of a host configuration entry that etdi
// does not start: its server is ambiguous for its host, or its program
// cannot be found as the host finds it (docs/hosts.md#host-configuration-files). Entry text is
// redacted with secrets.
func entryFinding(en *hostconfig.Entry, secrets *redact.Set) *finding.Finding {
	row := hostconfig.LaunchOf(en.Host)
	switch {
	case en.Ambiguous != "":
		return &finding.Finding{Kind: finding.AmbiguousEntry, Severity: finding.Error, Server: en.Name,
			Message: secrets.String(fmt.Sprintf("%s:%d: entry %q is ambiguous for %s: %s; not checked. Keep either the command or the URL (and a type that agrees), then check again: etdi check --config %s --name %s",
				en.File, en.Line, en.Name, row.Name, en.Ambiguous, en.File, en.Name))}
	case en.Unresolved != "":
		return &finding.Finding{Kind: finding.ProgramUnresolved, Severity: finding.Error, Server: en.Name,
			Message: secrets.String(fmt.Sprintf("%s:%d: entry %q: %s; not checked (etdi never looks it up on its own PATH). Give the program by its absolute path, or fix the entry's env PATH, then check again: etdi check --config %s --name %s",
				en.File, en.Line, en.Name, en.Unresolved, en.File, en.Name))}
	case en.Transport == "stdio" && en.Command != "" && en.Program == "" && len(en.Problems) == 0:
		return &finding.Finding{Kind: finding.ProgramUnresolved, Severity: finding.Error, Server: en.Name,
			Message: secrets.String(fmt.Sprintf("%s:%d: entry %q: the program %q was not resolved; not checked", en.File, en.Line, en.Name, en.Command))}
	}
	return nil
}

// recordServed asks whether to record what serves the server now in the
// pins of r approved without it (guard.Report.Unserved): --yes records
// it, --approve (or a terminal) asks, and otherwise it is reported with
// the command that records it, nothing changed meanwhile.
func (e *env) recordServed(r *guard.Report, t *target, yes, interactive bool) ([]pin.Approval, *guard.Report, error) {
	items := r.Unserved()
	served := t.Secrets.String(r.Observation.Served)
	say(e.stderr, "etdi: %d item(s) of %s were approved without recording what served them (%s); it is now served by %s\n",
		len(items), r.Server, t.Secrets.String(strings.Join(items, ", ")), served)
	if !yes {
		if !interactive && !e.stdinIsTerminal() {
			say(e.stderr, "etdi: warning: another program serving the same definitions would pass unnoticed until this is recorded; "+
				"record it: check the same server again with --yes (or --approve on a terminal)\n")
			return nil, r, nil
		}
		say(e.stderr, "record that %s serves them, so that another program is refused? [y/N]: ", served)
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && line == "" && !errors.Is(err, io.EOF) {
			return nil, r, err
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			say(e.stderr, "etdi: not recorded; nothing changed\n")
			return nil, r, nil
		}
	}
	recorded, c, err := guard.RecordServed(e.ctx, r)
	if err != nil {
		return nil, r, err
	}
	return recorded, r.After(c), nil
}

// instructionsHint tells how to accept instructions when a report asks
// for it.
func instructionsHint(reps []*checkReport) string {
	for _, r := range reps {
		for _, f := range r.Findings {
			if f.Kind.AboutInstructions() && f.Severity == finding.Error {
				return " (the server's instructions: --accept-instructions)"
			}
		}
	}
	return ""
}

func hasError(fs []finding.Finding) bool {
	for _, f := range fs {
		if f.Severity == finding.Error {
			return true
		}
	}
	return false
}

func printCheck(w io.Writer, rep *checkReport, p colour.Painter) {
	say(w, p.Strong("==")+" %s\n", rep.Target)
	switch {
	case rep.Disabled && rep.HostHonoursDisabled == string(hostconfig.Yes):
		say(w, "disabled in its file; the host does not start it: not checked\n")
		return
	case rep.Disabled && rep.HostHonoursDisabled == string(hostconfig.No):
		say(w, "disabled in its file, but the host starts it anyway: checked\n")
	case rep.Disabled:
		say(w, "disabled in its file, but whether the host honours that is not established: checked\n")
	}
	printRegistry(w, rep.Registry, p)
	if rep.Program != "" {
		say(w, "program %s\n", rep.Program)
	}
	if len(rep.Ignored) > 0 {
		say(w, "the host ignores its %s; etdi checks what the host reaches\n", strings.Join(rep.Ignored, ", "))
	}
	if rep.Error != "" {
		say(w, p.Bad("ERROR")+": %s\n", rep.Error)
		printFindingsWith(w, rep.Findings, nil)
		return
	}
	if r := rep.Verification; r != nil {
		if r.Verified {
			var by []string
			if r.Signer != nil {
				by = append(by, signerText(r.Signer))
			}
			if r.Token != nil {
				by = append(by, fmt.Sprintf("token of %s for %s", r.Token.Issuer, r.Token.Subject))
			}
			say(w, "bundle %s verified: provider %s, %s\n", r.Source, r.Provider.ID, strings.Join(by, " and "))
		} else {
			say(w, "bundle %s "+p.Bad("NOT verified")+"\n", r.Source)
		}
	}
	if rep.Server != "" {
		say(w, "server %s\n", rep.Server)
	}
	if line := unsignedLine(rep); line != "" {
		say(w, "%s\n", line)
	}
	width := 0
	for _, t := range rep.Tools {
		width = max(width, utf8.RuneCountInString(termtext.Escape(toolLabel(t))))
	}
	for _, t := range rep.Tools {
		d, _ := etdi.ParseDigest(t.Digest)
		status := map[pin.ToolStatus]string{pin.StatusOK: p.Good("ok"), pin.StatusNew: p.Warn("APPROVAL REQUIRED"), pin.StatusChanged: p.Bad("CHANGED"), pin.StatusBlocked: p.Bad("BLOCKED"), pin.StatusRemoved: "removed"}[t.Status]
		// status holds etdi's own colour codes and goes in the format;
		// scopes and calls are arguments, escaped as they are printed.
		scopes := ""
		if len(t.Scopes) > 0 {
			scopes = "; scopes: " + strings.Join(t.Scopes, ", ")
		}
		call := ""
		if c := callOf(rep.Calls, t); c != "" {
			call = "; calls: " + c
		}
		say(w, "  %-*s  sha256:%s  "+status+"%s%s\n", width, toolLabel(t), d.Short(), scopes, call)
	}
	if len(rep.Calls) > 0 && len(rep.session) > 0 {
		say(w, "  (calls: the first call of a session; %s read the session and may decide later calls otherwise)\n", strings.Join(rep.session, ", "))
	}
	var findings []finding.Finding
	for _, f := range rep.Findings {
		if !unsignedState(f) { // said once, above
			findings = append(findings, f)
		}
	}
	printFindingsFor(w, findings, rep.defs, rep.approve)
	for _, a := range rep.Approved {
		say(w, "%s\n", approvedLine(a))
	}
	if rep.InstructionsRecorded != nil {
		say(w, "recorded the instructions of %s as approved:\n", rep.Server)
		sayBlock(w, "    ", *rep.InstructionsRecorded)
	}
}

// callOf is what the policies decide of a tool's first call, "" without
// policies or for other items.
func callOf(calls []guard.CallDecision, t pin.ToolState) string {
	if t.Item != pin.ItemTool {
		return ""
	}
	for _, c := range calls {
		if c.Tool == t.Name {
			return c.Summary()
		}
	}
	return ""
}

// recordedInstructions returns the instructions an approval recorded, nil
// when it recorded none (or the server sends none: nothing to show).
func recordedInstructions(r *guard.Report, res *guard.ApproveResult) *string {
	if !res.InstructionsRecorded || r.Observation.Instructions == nil || *r.Observation.Instructions == "" {
		return nil
	}
	return r.Observation.Instructions
}

// printInstructionFindings shows the new or changed instructions about to
// be accepted, whole (a diff for changed ones).
func printInstructionFindings(w io.Writer, c *pin.Comparison) {
	for _, f := range c.Findings {
		if f.Kind.AboutInstructions() {
			printFindings(w, []finding.Finding{f})
		}
	}
}

func toolLabel(t pin.ToolState) string {
	if t.Version == "" {
		return pin.ItemRef(t.Item, t.Name)
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
