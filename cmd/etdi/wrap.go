package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/spf13/cobra"
)

// wrapState is what etdi wrap recorded to restore entries exactly
// (docs/hosts.md#wrapping-host-configurations): per configuration file (absolute path), one record per
// wrapped entry.
type wrapState struct {
	Version int                            `json:"version"`
	Files   map[string][]hostconfig.Record `json:"files"`
}

const maxWrapState = 64 << 20

func (e *env) wrapStatePath() string { return e.defaultFile("ETDI_WRAP_STATE", "wrapped.json") }

func loadWrapState(path string) (*wrapState, error) {
	st := &wrapState{Version: 1, Files: map[string][]hostconfig.Record{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxWrapState+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWrapState {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxWrapState)
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: unreadable wrap records: %v", path, err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("%s: wrap records of version %d, this etdi reads version 1", path, st.Version)
	}
	if st.Files == nil {
		st.Files = map[string][]hostconfig.Record{}
	}
	return st, nil
}

func saveWrapState(path string, st *wrapState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o600)
}

type wrapFlags struct {
	config, name, etdi, bundle string
	trust, pins                string
	dryRun, project            bool
}

func (e *env) wrapCmd() *cobra.Command   { return e.wrapOrUnwrapCmd(true) }
func (e *env) unwrapCmd() *cobra.Command { return e.wrapOrUnwrapCmd(false) }

// wrapHelp is the long help of etdi wrap.
const wrapHelp = `Rewrite the MCP server entries of a host configuration so that the host
starts them through etdi run, which checks each server before the host
talks to it. A stdio entry's command becomes etdi and its arguments
"run --name ENTRY -- COMMAND ARGS..."; a remote entry becomes
"run --name ENTRY --url URL", with its header values moved into the entry's
env (ETDI_HEADER_1, ...) and named with --header-env, never put in
arguments. Only the replaced values change: comments, formatting and every
other setting stay byte for byte. The first change keeps a copy of the file
as FILE.etdi-backup; what was replaced is recorded so that etdi unwrap
restores it exactly. An entry that already runs this etdi (or the one
given with --etdi) through etdi run is left alone; one that runs another
program named etdi (a repository's script, say), or etdi run with a
trust policy, pin database or lockfile other than yours, is refused, as
is one that cannot be rewritten faithfully, and left unchanged (exit 1).
--config auto rewrites every user file found (project-scoped files only
with --project). --dry-run prints the change and writes nothing.

The wrapped entries use the trust policy and pin database given with
--trust and --pins, or set in $ETDI_TRUST and $ETDI_PINS (written into
each entry as absolute paths, as the host does not share your
environment), else the defaults. The trust policy must exist first: wrap
refuses to write entries that could not start (create it with etdi trust
add, or etdi trust unsigned warn for servers without a bundle). A server whose
provider ships its bundle as a file, not in-band, is wrapped on its own
with --name ENTRY --bundle FILE.

MCPB extensions Claude Desktop installed (its "Claude Extensions"
directory beside claude_desktop_config.json) are listed as not wrapped,
with why: the host starts them from its own record of the MCPB, so etdi
leaves them unchanged; check an MCPB file with etdi check --mcpb FILE
(docs/registry.md#mcpb-files).`

func (e *env) wrapOrUnwrapCmd(wrap bool) *cobra.Command {
	var f wrapFlags
	cmd := &cobra.Command{
		Use:   "wrap --config FILE|auto [--name ENTRY] [--dry-run]",
		Short: "Rewrite host configuration entries to run their servers through etdi run",
		Long:  wrapHelp,
		Example: `  etdi wrap --config ~/.cursor/mcp.json --dry-run
  etdi wrap --config auto
  etdi wrap --config ~/.cursor/mcp.json --name weather --bundle ~/bundles/weather.etdi.json
  etdi unwrap --config auto`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.config == "" {
				return usagef("--config FILE|auto is required")
			}
			if wrap {
				if err := e.gatePaths(&f.trust, &f.pins); err != nil {
					return err
				}
			}
			if f.bundle != "" && f.name == "" {
				return usagef("--bundle is one server's: give the entry with --name")
			}
			return e.runWrap(&f, wrap)
		},
	}
	if !wrap {
		cmd.Use = "unwrap --config FILE|auto [--name ENTRY] [--dry-run]"
		cmd.Short = "Restore host configuration entries etdi wrap rewrote"
		cmd.Long = `Restore the entries that run your etdi through etdi run to the servers
they start. An entry still exactly as etdi wrap wrote it gets its original
bytes back, from the records wrap kept; any other (the host or you edited
the file since) is restored from what the entry itself says: the command
and arguments after "--" become its command and arguments again, and
"--url URL" its URL, with the headers etdi run took from the entry's env.
The rest of the file, other entries, other settings and comments, stays as
it is. Only entries whose program is your etdi (this etdi, or one given
with --etdi) are restored: an entry whose program is merely named etdi is
refused (exit 1), as is one that cannot be restored faithfully, and left
as it is. --dry-run prints the change and writes nothing.`
		cmd.Example = `  etdi unwrap --config ~/.cursor/mcp.json
  etdi unwrap --config auto --dry-run`
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "the host configuration file, or auto for every one found")
	fl.StringVar(&f.name, "name", "", "only the entry of this name")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the change and write nothing")
	fl.BoolVar(&f.project, "project", false, "with --config auto: also the project-scoped files in the working directory (.mcp.json, .vscode/mcp.json, ...)")
	if !wrap {
		fl.StringVar(&f.etdi, "etdi", "", "another etdi program of yours that wrapped entries run (this etdi always counts)")
	}
	if wrap {
		fl.StringVar(&f.etdi, "etdi", "", "the etdi program the entries run (default: this etdi's absolute path); entries that run it count as wrapped")
		fl.StringVar(&f.trust, "trust", "", "the trust policy the entries use, written as an absolute path (default: $ETDI_TRUST when set, else the default policy, not written)")
		fl.StringVar(&f.pins, "pins", "", "the pin database the entries use, written as an absolute path (default: $ETDI_PINS when set, else the default database, not written)")
		fl.StringVar(&f.bundle, "bundle", "", "with --name: the entry's out-of-band bundle, which etdi run verifies it with (written as an absolute path)")
	}
	return cmd
}

// thisEtdi is the program file of this etdi, links followed: what a
// wrapped entry runs.
func thisEtdi() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot tell where this etdi is (%v)", err)
	}
	return filepath.EvalSymlinks(exe)
}

// gatePaths sets the trust policy and pin database a wrapped entry names:
// those given, else what the person's environment names ($ETDI_TRUST,
// $ETDI_PINS), as absolute paths; the host starts etdi without that
// environment and in another directory. Empty when neither is set (the
// defaults, not written).
func (e *env) gatePaths(trust, pins *string) error {
	for _, p := range []struct {
		v        *string
		variable string
	}{{trust, "ETDI_TRUST"}, {pins, "ETDI_PINS"}} {
		if *p.v == "" {
			*p.v, _ = e.lookupEnv(p.variable)
		}
		if *p.v != "" {
			abs, err := filepath.Abs(*p.v)
			if err != nil {
				return err
			}
			*p.v = abs
		}
	}
	return nil
}

type configFile struct{ path, host string }

func (e *env) runWrap(f *wrapFlags, wrap bool) error {
	cwd, _ := os.Getwd()
	files, err := e.wrapFiles(f, cwd)
	if err != nil {
		return err
	}
	etdiPath := f.etdi
	if wrap && etdiPath == "" {
		if etdiPath, err = thisEtdi(); err != nil {
			return &hintError{err, "give --etdi PATH"}
		}
	}
	if wrap {
		if abs, err := filepath.Abs(etdiPath); err == nil {
			etdiPath = abs
		}
	}
	if wrap {
		if err := e.wrapPreflight(f); err != nil {
			return err
		}
	}
	gate, err := e.wrapGate(f, wrap)
	if err != nil {
		return err
	}
	statePath := e.wrapStatePath()
	st, err := loadWrapState(statePath)
	if err != nil {
		return err
	}
	total := map[string]int{}
	matched := false
	for _, cf := range files {
		n, err := e.wrapFile(cf, f, wrap, etdiPath, gate, st, statePath, cwd, total)
		if err != nil {
			return err
		}
		matched = matched || n > 0
	}
	if wrap {
		e.reportExtensions(files, f.name)
	}
	if f.name != "" && !matched {
		if !wrap {
			return fmt.Errorf("no entry named %q that etdi wrap rewrote in %s", f.name, f.config)
		}
		return fmt.Errorf("no server entry named %q in %s", f.name, f.config)
	}
	if len(files) > 1 {
		say(e.stdout, "etdi: %d file(s): %s\n", len(files), summary(total, wrap, f.dryRun))
	}
	if total[hostconfig.StatusRefused] > 0 {
		return &exitCodeError{exitError}
	}
	return nil
}

// wrapFiles are the host configuration files wrap and unwrap rewrite:
// --config, or with auto every file found but project-scoped ones, unless
// --project.
func (e *env) wrapFiles(f *wrapFlags, cwd string) ([]configFile, error) {
	if f.config != "auto" {
		return []configFile{{f.config, ""}}, nil
	}
	home, _ := os.UserHomeDir()
	o := hostconfig.Options{Home: home, Cwd: cwd, Lookup: e.lookupEnv}
	var files []configFile
	seen := map[string]bool{}
	var skipped []string
	for _, l := range hostconfig.Locations(runtime.GOOS, o) {
		abs, _ := filepath.Abs(l.Path)
		if seen[abs] {
			continue
		}
		seen[abs] = true
		if _, err := os.Stat(l.Path); err != nil {
			continue
		}
		if l.Project && !f.project {
			skipped = append(skipped, l.Path)
			continue
		}
		files = append(files, configFile{l.Path, l.Host})
	}
	if len(skipped) > 0 {
		say(e.stderr, "etdi: leaving project-scoped files alone, which the repository wrote: %s\n"+
			"etdi: hint: review them, then pass --project to include them\n", strings.Join(skipped, ", "))
	}
	if len(files) == 0 {
		return nil, &hintError{fmt.Errorf("%w", hostconfig.ErrNoConfig), "give a file with --config PATH"}
	}
	return files, nil
}

// wrapPreflight refuses to wrap entries that etdi run could not start:
// without a trust policy every wrapped server would fail, and a bundle
// named must be one. The bundle is named by its absolute path (the host's
// working directory is not the person's). A dry run only warns.
func (e *env) wrapPreflight(f *wrapFlags) error {
	var problems []error
	policy := e.defaultTrust()
	if f.trust != "" {
		policy = f.trust
	}
	if _, err := loadPolicy(policy); err != nil {
		problems = append(problems, &hintError{fmt.Errorf("the wrapped servers could not start: %w", err),
			"set etdi up with etdi init (creates the policy, reviews every server, then wraps); or create the policy first: etdi trust unsigned warn for servers without a bundle, etdi trust add --provider ID --key KEY.pub for a provider's key"})
	}
	if f.bundle != "" {
		abs, err := filepath.Abs(f.bundle)
		if err == nil {
			f.bundle = abs
			var data []byte
			if data, err = e.readInput(abs); err == nil {
				if err = notABundle(abs, data); err == nil {
					_, err = etdi.ParseBundle(data)
				}
			}
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("--bundle: %w", err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if f.dryRun {
		for _, p := range problems {
			say(e.stderr, "etdi: warning: %v\n", p)
		}
		return nil
	}
	return problems[0]
}

func summary(c map[string]int, wrap, dry bool) string {
	var parts []string
	if wrap {
		verb := "wrapped"
		if dry {
			verb = "to wrap"
		}
		parts = append(parts, fmt.Sprintf("%d %s", c[hostconfig.StatusWrapped], verb), fmt.Sprintf("%d already wrapped", c[hostconfig.StatusAlreadyWrapped]))
	} else {
		verb := "unwrapped"
		if dry {
			verb = "to unwrap"
		}
		parts = append(parts, fmt.Sprintf("%d %s", c[hostconfig.StatusUnwrapped], verb))
		if n := c[hostconfig.StatusNotWrapped]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d not wrapped", n))
		}
	}
	parts = append(parts, fmt.Sprintf("%d refused", c[hostconfig.StatusRefused]))
	for _, s := range []string{hostconfig.StatusDisabled, hostconfig.StatusSkipped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// wrapFile wraps or unwraps one file and returns how many entries it
// reported on.
func (e *env) wrapFile(cf configFile, f *wrapFlags, wrap bool, etdiPath string, gate hostconfig.Gate, st *wrapState, statePath, cwd string, total map[string]int) (int, error) {
	abs, err := filepath.Abs(cf.path)
	if err != nil {
		return 0, err
	}
	// Rewrite the file itself, not a symbolic link to it.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return 0, err
	}
	data, err := hostconfig.ReadConfig(real)
	if err != nil {
		return 0, err
	}
	host := cf.host
	if host == "" {
		host = hostconfig.GuessHost(real)
	}
	var res *hostconfig.Result
	if wrap {
		res, err = hostconfig.Wrap(real, data, hostconfig.WrapOptions{Host: host, Etdi: etdiPath, Name: f.name, Bundle: f.bundle, Trust: f.trust, Pins: f.pins, Cwd: cwd, Gate: gate, Lookup: e.lookupEnv})
	} else {
		res, err = hostconfig.Unwrap(real, data, hostconfig.UnwrapOptions{Host: host, Name: f.name, Records: st.Files[real], Cwd: cwd, Gate: gate, Lookup: e.lookupEnv})
	}
	if err != nil {
		return 0, err
	}
	counts := map[string]int{}
	for _, o := range res.Outcomes {
		counts[o.Status]++
		total[o.Status]++
		if o.Reason != "" {
			say(e.stdout, "  %s: %s: %s\n", o.Name, o.Status, o.Reason)
		} else {
			say(e.stdout, "  %s: %s\n", o.Name, o.Status)
		}
	}
	changed := !bytes.Equal(res.Data, data)
	if f.dryRun {
		if changed {
			printWrapDiff(e.stdout, real, data, res)
		}
	} else if changed {
		if err := writeWrapped(real, data, res, fi.Mode().Perm(), wrap, st, statePath); err != nil {
			return 0, err
		}
	}
	if !wrap && !f.dryRun && (changed || len(res.Records) != len(st.Files[real])) {
		if len(res.Records) == 0 {
			delete(st.Files, real)
		} else {
			st.Files[real] = res.Records
		}
		if err := saveWrapState(statePath, st); err != nil {
			return 0, err
		}
	}
	say(e.stdout, "etdi: %s: %s\n", real, summary(counts, wrap, f.dryRun))
	return len(res.Outcomes), nil
}

// writeWrapped writes the file real, read as data, as res rewrote it.
// Wrapping first keeps the file as it was (real.etdi-backup, once) and
// saves the records of the change.
func writeWrapped(real string, data []byte, res *hostconfig.Result, perm os.FileMode, wrap bool, st *wrapState, statePath string) error {
	if !wrap {
		return atomicfile.Write(real, res.Data, perm)
	}
	backup := real + ".etdi-backup"
	if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Create(backup, data, 0o600); err != nil {
			return err
		}
	}
	st.Files[real] = mergeRecords(st.Files[real], res.Records)
	// The records are saved first: if the file cannot be written, a record
	// of a change never made is recognized and dropped by unwrap.
	if err := saveWrapState(statePath, st); err != nil {
		return err
	}
	return atomicfile.Write(real, res.Data, perm)
}

// mergeRecords replaces the records of the same entries and keeps the
// others.
func mergeRecords(old, added []hostconfig.Record) []hostconfig.Record {
	key := func(r hostconfig.Record) string { return strings.Join(r.Path, "\x00") }
	fresh := map[string]bool{}
	for _, r := range added {
		fresh[key(r)] = true
	}
	var out []hostconfig.Record
	for _, r := range old {
		if !fresh[key(r)] {
			out = append(out, r)
		}
	}
	return append(out, added...)
}

// printWrapDiff prints the change as unified-diff hunks of whole lines.
func printWrapDiff(w io.Writer, path string, old []byte, res *hostconfig.Result) {
	type hunk struct{ os, oe, ns, ne int }
	var hunks []hunk
	for _, c := range res.Changes {
		h := hunk{lineStart(old, c.OldStart), lineEnd(old, max(c.OldEnd, c.OldStart+1)-1), lineStart(res.Data, c.NewStart), lineEnd(res.Data, max(c.NewEnd, c.NewStart+1)-1)}
		if n := len(hunks); n > 0 && h.os <= hunks[n-1].oe {
			hunks[n-1].oe, hunks[n-1].ne = h.oe, h.ne
			continue
		}
		hunks = append(hunks, h)
	}
	say(w, "--- %s\n+++ %s\n", path, path)
	for _, h := range hunks {
		ol, nl := lines(old[h.os:h.oe]), lines(res.Data[h.ns:h.ne])
		say(w, "@@ -%d,%d +%d,%d @@\n", lineNo(old, h.os), len(ol), lineNo(res.Data, h.ns), len(nl))
		for _, l := range ol {
			say(w, "-%s\n", l)
		}
		for _, l := range nl {
			say(w, "+%s\n", l)
		}
	}
}

func lineStart(b []byte, off int) int {
	off = min(off, len(b))
	for off > 0 && b[off-1] != '\n' {
		off--
	}
	return off
}

// lineEnd returns the offset after the line break of the line holding off.
func lineEnd(b []byte, off int) int {
	if off < 0 {
		off = 0
	}
	for off < len(b) && b[off] != '\n' {
		off++
	}
	if off < len(b) {
		off++
	}
	return off
}

func lineNo(b []byte, off int) int { return bytes.Count(b[:off], []byte("\n")) + 1 }

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	for i := range out {
		out[i] = strings.TrimSuffix(out[i], "\r")
	}
	return out
}

// userGate is the user's own etdi (docs/hosts.md#wrapping-host-configurations): this etdi and the one
// given with --etdi, and the trust policy, pin store and lockfile it
// uses. Entries are taken as wrapped only when they run one of these
// programs, and reported when their etdi run uses other files.
func userGate(etdiFlag, trust, pins, lock string) (hostconfig.Gate, error) {
	var g hostconfig.Gate
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			g.Etdi = append(g.Etdi, real)
		}
	}
	if etdiFlag != "" {
		abs, err := filepath.Abs(etdiFlag)
		if err != nil {
			return g, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
			return g, usagef("--etdi %s is not a program file: give the path of an etdi you run", abs)
		}
		g.Etdi = append(g.Etdi, abs)
	}
	abs := func(p string) string {
		if p == "" || strings.Contains(p, "://") {
			return p
		}
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	g.Trust, g.Pins, g.Lock = abs(trust), abs(pins), abs(lock)
	return g, nil
}

// wrapGate is the user's gate for wrap and unwrap: the trust policy and
// pin database wrap writes, else the defaults.
func (e *env) wrapGate(f *wrapFlags, wrap bool) (hostconfig.Gate, error) {
	trust, pins := f.trust, f.pins
	if trust == "" {
		trust = e.defaultTrust()
	}
	if pins == "" {
		pins = e.defaultPins()
	}
	etdiFlag := f.etdi
	if wrap {
		etdiFlag = "" // wrap adds the program it writes
	}
	return userGate(etdiFlag, trust, pins, "")
}

// configGate is the user's gate for reading host configurations
// (check --config and the like): --etdi, --trust, and the pin store or
// lockfile the command uses.
func (e *env) configGate(f *serverFlags) (hostconfig.Gate, error) {
	pins := f.gatePins
	if pins == "" {
		pins = e.defaultPins()
	}
	g, err := userGate(f.etdi, f.policy, pins, f.gateLock)
	for _, c := range f.gateCedar {
		if abs, err := filepath.Abs(c); err == nil {
			g.Cedar = append(g.Cedar, abs)
		}
	}
	return g, err
}

// addConfigFindings puts the entry's configuration findings into its
// report, whatever else the check found.
func addConfigFindings(rep *checkReport, t *target) {
	if len(t.Findings) == 0 {
		return
	}
	rep.Findings = append(append([]finding.Finding(nil), t.Findings...), rep.Findings...)
	rep.ExitCode = worse(rep.ExitCode, exitFor(t.Findings))
}
