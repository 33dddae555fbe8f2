package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
)

// initCategories are what etdi init --yes approves: first use of servers
// and tools never seen, nothing that changed.
var initCategories = []guard.Category{guard.CategoryNewServers, guard.CategoryNewTools}

// initHelp is the long help of etdi init.
const initHelp = `Set etdi up from nothing, or see that it still is: create the trust
policy if there is none (asking on a terminal whether servers without a
signed bundle are reviewed and pinned, warn, or refused, block; or as
--unsigned says), find every host configuration (as --config auto does),
check every server, and show one line per server: its entry, host,
identity, tool count and state. What needs a decision is then asked
about item by item on a terminal, as etdi review does; last, init offers
to wrap every entry so that each host starts its servers through etdi
run.

--yes decides without asking, for scripts: it approves new servers and
new tools of known servers (first use), and wraps. It never approves a
changed definition, impersonation, an entry that imitates etdi's gate or
anything else a check reports as a security error: those stay and are
reported (etdi review decides them). --no-wrap leaves the host
configurations as they are.

A second run changes nothing that is in place: an existing trust policy
is kept as it is, approved servers are one line each, and wrapped entries
stay wrapped.

Exit codes: 0 when every server is ok; 13 when something still needs
approval; 10, 11, 12 or 14 when a server is blocked by a security
finding; 1 when a server could not be checked or an entry could not be
wrapped; 2 a usage error (such as no trust policy, no terminal and no
--unsigned).`

func (e *env) initCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var unsigned string
	var yes, noWrap bool
	cmd := &cobra.Command{
		Use:   "init [--unsigned warn|block] [--yes] [--no-wrap]",
		Short: "Protect every host's MCP servers in one step: trust policy, review, approval, wrapping",
		Long:  initHelp,
		Example: `  etdi init
  etdi init --unsigned warn --yes`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rule trust.UnsignedRule
			if unsigned != "" {
				if unsigned != string(trust.Warn) && unsigned != string(trust.Block) {
					return usagef("--unsigned is warn or block, not %q", unsigned)
				}
				rule = trust.UnsignedRule(unsigned)
			}
			interactive := !yes && e.stdinIsTerminal()
			in := bufio.NewReader(e.stdin)
			if err := e.initPolicy(sf.policy, rule, interactive, in); err != nil {
				return err
			}
			sf.config = "auto"
			rv, err := e.gather(&sf, &pf)
			if err != nil {
				return err
			}
			items := guard.Pending(rv.reports)
			var accepted []guard.ReviewItem
			switch {
			case interactive:
				printCompact(e.stdout, rv, true)
				if accepted, err = e.walkReview(in, rv, items); err != nil {
					return err
				}
			case yes:
				for _, it := range items {
					if it.Selected(initCategories) {
						accepted = append(accepted, it)
					}
				}
			}
			applied, err := guard.Apply(e.ctx, rv.reports, accepted)
			rv.settle(applied)
			if err != nil {
				return e.guardError(err)
			}
			for _, a := range applied {
				if len(a.Withdrawn) > 0 {
					say(e.stderr, "etdi: %s changed while you decided; nothing of it was approved: run etdi review\n", rv.where(a.Report))
				}
			}
			wrapErr := e.initWrap(&sf, &pf, rv, yes, interactive, noWrap, in)
			if !interactive {
				printCompact(e.stdout, rv, true)
			}
			return e.initExit(rv, interactive, wrapErr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.policy, "trust", e.defaultTrust(), "trust policy file, created if missing ($ETDI_TRUST)")
	fl.StringVar(&unsigned, "unsigned", "", "when the trust policy is created: warn (review and pin servers without a signed bundle) or block (refuse them)")
	fl.BoolVar(&yes, "yes", false, "decide without asking: approve new servers and new tools (never a changed definition or impersonation), and wrap")
	fl.BoolVar(&noWrap, "no-wrap", false, "leave the host configurations as they are")
	fl.BoolVar(&sf.project, "project", false, "also the project-scoped files in the working directory (.mcp.json, .vscode/mcp.json, ...)")
	fl.DurationVar(&sf.startTimeout, "start-timeout", defaultStartTimeout, "how long a server may take to answer initialize")
	fl.DurationVar(&sf.timeout, "timeout", defaultFetchTimeout, "how long fetching one server's tools may take in all")
	pf.register(fl, e)
	pf.registerBy(fl)
	return cmd
}

// initExit prints what is left pending after etdi init and the summary,
// and ends with the exit code: that of the checks, or 1 when an entry
// could not be wrapped and no security finding is worse.
func (e *env) initExit(rv *reviewed, interactive bool, wrapErr error) error {
	left := guard.Pending(rv.reports)
	if !interactive {
		for _, it := range left {
			say(e.stdout, "pending %s: %s %s\n", it.Category, rv.where(it.Report), itemText(it))
		}
	}
	say(e.stderr, "etdi: %s; %d pending\n", summarize(rv.reps), len(left))
	if len(left) > 0 {
		fmt.Fprint(e.stderr, decideHint("decide what is pending", left))
	}
	code := combineExit(rv.reps)
	if wrapErr != nil {
		if code == exitOK || code == exitApproval {
			code = exitError // a security finding stays the code
		}
		var ec *exitCodeError
		if errors.As(wrapErr, &ec) {
			say(e.stderr, "etdi: some entries were not wrapped (above); etdi wrap --config auto says why again\n")
		} else {
			say(e.stderr, "etdi: error: wrapping: %v\n", wrapErr)
		}
	}
	if code != exitOK {
		return &exitCodeError{code}
	}
	return nil
}

// initPolicy creates the trust policy at path when there is none, with
// the unsigned rule given or asked for; an existing one is kept.
func (e *env) initPolicy(path string, rule trust.UnsignedRule, interactive bool, in *bufio.Reader) error {
	p, err := trust.Load(path)
	switch {
	case err == nil:
		say(e.stdout, "etdi: trust policy %s (unsigned servers: %s)\n", path, string(p.Unsigned))
		if rule != "" && rule != p.Unsigned {
			say(e.stderr, "etdi: the trust policy is kept as it is; to change it: etdi trust unsigned %s --trust %s\n", string(rule), path)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return &hintError{fmt.Errorf("trust policy: %w", err), "repair or remove " + path + ", then run etdi init again"}
	}
	if rule == "" {
		if !interactive {
			return usagef("there is no trust policy at %s yet: say what happens to servers without a signed bundle with --unsigned warn (review and pin them) or --unsigned block (refuse them)", path)
		}
		say(e.stderr, "There is no trust policy yet. Most MCP servers today have no signed bundle:\n"+
			"  warn   review each such server once and pin its tools by digest; any later change is caught\n"+
			"  block  run only servers whose provider signed their tools\n")
		for rule == "" {
			say(e.stderr, "servers without a signed bundle: [W]arn or [b]lock? ")
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				return fmt.Errorf("no answer: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "", "w", "warn":
				rule = trust.Warn
			case "b", "block":
				rule = trust.Block
			}
		}
	}
	p = trust.New()
	p.Unsigned = rule
	if err := p.Save(path); err != nil {
		return err
	}
	say(e.stdout, "etdi: created the trust policy %s (unsigned servers: %s)\n", path, string(rule))
	if rule == trust.Warn {
		say(e.stdout, "etdi: warn: a server without a signed bundle is reviewed once and its tools pinned by digest, so any later change is caught;\n"+
			"etdi: block would run only servers whose provider signed them (etdi trust unsigned block).\n")
	} else {
		say(e.stdout, "etdi: block: only servers whose provider signed their tools run; servers without a signed bundle are refused;\n"+
			"etdi: warn would review and pin them by digest instead (etdi trust unsigned warn).\n")
	}
	return nil
}

// initWrap wraps every entry not yet wrapped, with --yes or when the
// person agrees, and marks the servers' reports as they now stand.
func (e *env) initWrap(sf *serverFlags, pf *pinFlags, rv *reviewed, yes, interactive, noWrap bool, in *bufio.Reader) error {
	todo := unwrapped(rv)
	if todo == 0 || noWrap || !e.agreeToWrap(todo, yes, interactive, in) {
		return nil
	}
	f, err := e.initWrapFlags(sf, pf)
	if err != nil {
		return err
	}
	// What wrap says file by file is kept unless it fails: the servers'
	// lines say where each stands.
	var out bytes.Buffer
	saved := e.stdout
	e.stdout = &out
	err = e.runWrap(f, true)
	e.stdout = saved
	if err != nil {
		e.stdout.Write(out.Bytes())
	}
	e.markWrapped(sf, rv)
	return err
}

// unwrapped counts the entries that wrapping would change: those not
// wrapped, except disabled ones whose host honours that.
func unwrapped(rv *reviewed) int {
	todo := 0
	for _, rep := range rv.reps {
		if !rep.Wrapped && !(rep.Disabled && rep.HostHonoursDisabled == "yes") {
			todo++
		}
	}
	return todo
}

// agreeToWrap decides whether to wrap the todo entries: with yes, or
// when the person on a terminal does not say no.
func (e *env) agreeToWrap(todo int, yes, interactive bool, in *bufio.Reader) bool {
	if yes {
		return true
	}
	if !interactive {
		say(e.stderr, "etdi: hint: %d entries are not wrapped: etdi init --yes, or etdi wrap --config auto, makes each host start them through etdi run\n", todo)
		return false
	}
	say(e.stderr, "\nwrap %d entries so that each host starts its servers through etdi run? [Y/n]: ", todo)
	line, err := in.ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); (err != nil && line == "") || (a != "" && a != "y" && a != "yes") {
		say(e.stderr, "etdi: not wrapped; etdi wrap --config auto does it later\n")
		return false
	}
	return true
}

// initWrapFlags are the flags of the wrap init does: every host
// configuration, and the trust policy and pin database by absolute path
// when the person named them or their environment does (the host starts
// etdi without that environment).
func (e *env) initWrapFlags(sf *serverFlags, pf *pinFlags) (*wrapFlags, error) {
	f := &wrapFlags{config: "auto", project: sf.project}
	for _, p := range []struct {
		v, val, variable string
		dst              *string
	}{{"trust", sf.policy, "ETDI_TRUST", &f.trust}, {"pins", pf.path, "ETDI_PINS", &f.pins}} {
		if own, ok := e.lookupEnv(p.variable); (ok && own != "") || p.val != e.defaultFile(p.variable, map[string]string{"trust": "trust.json", "pins": "pins.db"}[p.v]) {
			abs, err := filepath.Abs(p.val)
			if err != nil {
				return nil, err
			}
			*p.dst = abs
		}
	}
	return f, nil
}

// markWrapped reads the entries again, as their hosts now start them,
// and marks each server's report wrapped or not.
func (e *env) markWrapped(sf *serverFlags, rv *reviewed) {
	again := *sf
	ts, err := e.targets(&again, nil, -1)
	if err != nil {
		return
	}
	for i := range rv.ts {
		for _, t := range ts {
			if t.Entry != nil && rv.ts[i].Entry != nil && t.location == rv.ts[i].location && t.Name == rv.ts[i].Name {
				rv.reps[i].Wrapped = t.Entry.Wrapped
			}
		}
	}
}
