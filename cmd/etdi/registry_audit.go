package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin/lockfile"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/spf13/cobra"
)

func init() {
	registrySubcommands = append(registrySubcommands, (*env).registryAuditCmd)
}

// registryAuditFlags are the flags of etdi registry audit.
type registryAuditFlags struct {
	pf                 pinFlags
	lf                 lockFlags
	policy             string
	updatedSince       string
	sarifRoot          string
	search             string
	concurrency        int
	timeout            time.Duration
	asJSON, asSARIF    bool
	noApprovals, quiet bool
}

func (e *env) registryAuditCmd() *cobra.Command {
	var f registryAuditFlags
	cmd := &cobra.Command{
		Use:   "audit URL [--updated-since TIME] [--trust FILE] [--pins DB | --lock FILE] [--json | --sarif] [--concurrency N]",
		Short: "Judge every entry of an MCP registry: signed, verified, bound, approved",
		Long: `Walk every entry of the MCP registry at URL (the API v0.1 listing, page
after page) and judge each server version without starting it:

  - signed: its server.json names an etdi bundle (dev.etdi under the
    publisher-provided _meta); an entry without one is decided by the trust
    policy's unsigned rule (block: exit 10; warn, allow: it passes, as
    "unsigned", and only a live check sees its tools);
  - the bundle at the URL named is the one named (its SHA-256), and a key
    the trust policy holds for its provider signed it (else exit 10);
  - the bundle binds the entry: its registry name and every package and
    remote the entry lists (npm and PyPI name and version, OCI digest or
    tag, MCPB SHA-256, remote URL); a bundle made for another entry is
    impersonation (exit 12);
  - every tool it signs is approved in the team's pin database (--pins,
    opened read-only) or lockfile (--lock): new tools or versions need
    approval (exit 13), revoked ones are blocked (exit 14).

Each entry is one line (its status: approved, verified, unsigned,
approval_required, blocked, deleted, or error when it could not be
judged), followed by its findings when it does not pass; a summary line
ends the report on standard error. Deleted entries appear only in a
listing with --updated-since (as the registry lists them), and are not
judged. Nothing is written: the pin database is only read.

The exit code is the most severe of the entries' (12 > 11 > 10 > 14 >
13); else 1 when an entry could not be judged or the registry could not
be read to the end; else 0. --json prints the verdicts (schema
schemas/registry-audit.schema.json); --sarif prints SARIF 2.1.0 for code
scanning, one result per error or warning finding, located at the trust
policy (under --sarif-root) with the entry and tool as logical locations.

Bundles are fetched --concurrency at a time, each bounded in size, and
each entry is judged within --timeout.`,
		Example: `  etdi registry audit https://registry.example.com --pins team.db
  etdi registry audit https://registry.example.com --lock .etdi/etdi.lock.json --json
  etdi registry audit https://registry.example.com --updated-since 2026-11-01T00:00:00Z --sarif > audit.sarif`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return e.runRegistryAudit(cmd, &f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.policy, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	f.pf.register(fl, e)
	f.lf.register(fl, "judge approvals by this team lockfile instead of a pin database (etdi pin export --lock writes one)")
	fl.BoolVar(&f.noApprovals, "no-approvals", false, "do not look at approvals: judge signatures and bindings only (a bound, verified entry is \"verified\")")
	fl.StringVar(&f.updatedSince, "updated-since", "", "only entries updated after this time (RFC 3339, e.g. 2026-11-01T00:00:00Z), deleted ones included")
	fl.StringVar(&f.search, "search", "", "only entries whose name contains this text (the registry's search)")
	fl.IntVar(&f.concurrency, "concurrency", audit.DefaultConcurrency, fmt.Sprintf("entries judged (bundles fetched) at a time, 1 to %d", audit.MaxConcurrency))
	fl.DurationVar(&f.timeout, "timeout", audit.DefaultTimeout, "how long one entry may take to judge (fetching its bundle included)")
	fl.BoolVar(&f.asJSON, "json", false, "print the verdicts as JSON")
	fl.BoolVar(&f.asSARIF, "sarif", false, "print the findings as SARIF 2.1.0, for code scanning")
	fl.StringVar(&f.sarifRoot, "sarif-root", "", "with --sarif: the repository root that result locations are relative to (default: the working directory)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the entries that do not pass, and the summary")
	return cmd
}

// auditOutput is the JSON output of etdi registry audit
// (schemas/registry-audit.schema.json).
type auditOutput struct {
	SchemaVersion int             `json:"schemaVersion"`
	Registry      string          `json:"registry"`
	UpdatedSince  *time.Time      `json:"updatedSince,omitempty"`
	Entries       []audit.Verdict `json:"entries"`
	Summary       audit.Summary   `json:"summary"`
	// Error says why the registry could not be read to the end.
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
}

func (e *env) runRegistryAudit(cmd *cobra.Command, f *registryAuditFlags, registryURL string) error {
	if f.asJSON && f.asSARIF {
		return usagef("--json and --sarif cannot be combined")
	}
	if cmd.Flags().Changed("sarif-root") && !f.asSARIF {
		return usagef("--sarif-root applies to --sarif output")
	}
	var so sarifOptions
	if f.asSARIF {
		var err error
		if so, err = newSarifOptions(f.sarifRoot, f.policy); err != nil {
			return err
		}
	}
	if f.concurrency < 1 || f.concurrency > audit.MaxConcurrency {
		return usagef("--concurrency %d: want 1 to %d", f.concurrency, audit.MaxConcurrency)
	}
	if f.timeout <= 0 {
		return usagef("--timeout %s: want a positive duration", f.timeout)
	}
	lo := registry.ListOptions{Search: f.search}
	if f.updatedSince != "" {
		t, err := time.Parse(time.RFC3339, f.updatedSince)
		if err != nil {
			return usagef("--updated-since %q: want an RFC 3339 time, e.g. 2026-11-01T00:00:00Z", f.updatedSince)
		}
		lo.UpdatedSince = t
	}
	if f.lf.path != "" && cmd.Flags().Changed("pins") {
		return usagef("--lock and --pins cannot be combined: the audit judges approvals by one of them")
	}
	if f.noApprovals && (f.lf.path != "" || cmd.Flags().Changed("pins")) {
		return usagef("--no-approvals cannot be combined with --pins or --lock")
	}
	if len(f.lf.keys) > 0 && f.lf.path == "" {
		return usagef("--lock-key needs --lock FILE")
	}
	client, err := registry.NewClient(registryURL)
	if err != nil {
		return usagef("%v", err)
	}
	p, err := loadPolicy(f.policy)
	if err != nil {
		return err
	}
	opts := audit.Options{Trust: p, Timeout: f.timeout, LockTimeout: f.pf.lockTimeout, Etcd: f.pf.options(true).Etcd}
	switch {
	case f.noApprovals:
	case f.lf.path != "":
		var lf *lockfile.File
		if lf, err = e.readLock(f.lf.path, f.lf.keys); err != nil {
			return err
		}
		opts.Lockfile = lf
	default:
		opts.Pins = f.pf.path
	}
	a, err := audit.New(opts)
	if err != nil {
		return err
	}
	defer a.Close()

	out := &auditOutput{SchemaVersion: jsonSchemaVersion, Registry: client.BaseURL, Entries: []audit.Verdict{}}
	if !lo.UpdatedSince.IsZero() {
		out.UpdatedSince = &lo.UpdatedSince
	}
	text := !f.asJSON && !f.asSARIF
	sum, walkErr := a.Audit(context.Background(), client, lo, f.concurrency, func(v audit.Verdict) error {
		if text {
			printVerdict(e.stdout, &v, f.quiet)
		} else {
			out.Entries = append(out.Entries, v)
		}
		return nil
	})
	out.Summary = sum
	out.ExitCode = sum.ExitCode()
	if walkErr != nil {
		out.Error = walkErr.Error()
		if out.ExitCode == exitOK || out.ExitCode == exitApproval {
			out.ExitCode = exitError
		}
	}
	switch {
	case f.asJSON:
		err = e.writeJSON(out)
	case f.asSARIF:
		err = e.writeJSON(auditSarif(out, so))
	}
	if err != nil {
		return err
	}
	if walkErr != nil {
		say(e.stderr, "etdi: error: the registry could not be read to the end: %v\n", walkErr)
	}
	say(e.stderr, "etdi: %s\n", sum.String())
	if out.ExitCode != exitOK {
		return &exitCodeError{out.ExitCode}
	}
	return nil
}

// printVerdict prints one entry: a line, and its findings unless it
// passes without warnings. Everything the registry or a bundle sent is
// escaped (say).
func printVerdict(w io.Writer, v *audit.Verdict, quiet bool) {
	if quiet && v.Pass() {
		return
	}
	label := string(v.Status)
	switch v.Status {
	case audit.Blocked:
		label = fmt.Sprintf("BLOCKED (exit %d)", v.ExitCode)
	case audit.ApprovalRequired:
		label = "APPROVAL REQUIRED (exit 13)"
	case audit.Error:
		label = "NOT JUDGED (exit 1)"
	}
	detail := ""
	if v.Server != "" {
		detail = " " + v.Server
	}
	if v.RegistryStatus == registry.StatusDeprecated {
		detail += " (deprecated)"
	}
	say(w, "%s %s: %s%s\n", v.Name, v.Version, label, detail)
	if v.Error != "" {
		say(w, "  error: %s\n", v.Error)
	}
	var shown []finding.Finding
	for _, f := range v.Findings {
		if f.Severity != finding.Info {
			shown = append(shown, f)
		}
	}
	for _, f := range shown {
		say(w, "  %s: %s: %s\n", levelOf(f).Label, f.Kind, f.Message)
	}
}

// auditSarif turns an audit into SARIF 2.1.0 with check's profile
// (sarifLog): check's rules, one result per error or warning finding and
// per entry that could not be judged, each located at the trust policy
// the entry was judged by (code scanning locates results in files of the
// repository only), with the entry and the tool as logical locations, and
// fingerprinted by the entry, the kind and what the finding is about.
func auditSarif(out *auditOutput, o sarifOptions) *sarifDoc {
	run := sarifRun{Results: []sarifResult{}}
	run.OriginalURIBaseIDs = map[string]sarifArtifact{sarifSrcRoot: {URI: dirURI(o.root)}}
	run.Tool.Driver.Name = "etdi"
	run.Tool.Driver.Version = readBuildInfo().Version
	run.Tool.Driver.InformationURI = "https://etdi.dev"
	run.Tool.Driver.Rules = sarifRules()
	seen := map[string]int{}
	add := func(r sarifResult, identity ...string) {
		fp := fingerprint(identity...)
		seen[fp]++
		v := fp + ":" + fmt.Sprint(seen[fp])
		r.PartialFingerprints = map[string]string{sarifFingerprint: v, sarifLineHash: v}
		run.Results = append(run.Results, r)
	}
	for i := range out.Entries {
		v := &out.Entries[i]
		entry := v.Name + "@" + v.Version
		if v.Status == audit.Error {
			add(sarifResult{RuleID: sarifErrorRule, Level: "error", Message: sarifMessage{sarifText(entry + ": " + v.Error)},
				Locations: o.auditLocations(v, "")}, sarifErrorRule, entry)
			continue
		}
		for j := range v.Findings {
			f := &v.Findings[j]
			if f.Severity == finding.Info {
				continue
			}
			rule := "etdi/" + string(f.Kind)
			add(sarifResult{RuleID: rule, Level: levelOf(*f).SARIF, Message: sarifMessage{sarifText(entry + ": " + f.Message)},
				Locations: o.auditLocations(v, f.Tool), Properties: f},
				rule, entry, f.Item, f.Tool, f.KeyID)
		}
	}
	return &sarifDoc{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}
}

// auditLocations locates a result at the trust policy, with the entry
// and the tool as logical locations.
func (o sarifOptions) auditLocations(v *audit.Verdict, tool string) []sarifLocation {
	l := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: o.artifact(o.policy), Region: sarifRegion{StartLine: 1}}}
	entry := termtext.Escape(v.Name + "@" + v.Version)
	l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: entry, FullyQualifiedName: entry, Kind: "module"})
	if tool != "" {
		tool = termtext.Escape(tool)
		l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: tool, FullyQualifiedName: entry + "/" + tool, Kind: "function"})
	}
	return []sarifLocation{l}
}
