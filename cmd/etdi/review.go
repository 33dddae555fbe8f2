package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
)

// bareYes is the value of a --yes given without categories.
const bareYes = "\x00"

func (e *env) reviewCmd() *cobra.Command {
	var sf serverFlags
	var pf pinFlags
	var yes string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "review [--config auto|FILE] [--yes=CATEGORIES] [--json]",
		Short: "Decide about everything pending across every host and server",
		Long: `Check every server of every host configuration found (--config auto, the
default; or one file), then walk every pending decision, riskiest kind of
change last to first seen: new servers, new tools (and new versions,
signers, instructions), changed definitions (rug pulls and downgrades,
shown with their word diff and any suspicious text), impersonation
(another signer, a name another server has, a look-alike name), updates
(a new implementation of a server with the same definitions) and name
collisions. A decision that several hosts share (one server configured
in each) is asked once.

On a terminal each item is shown in full and asked about:
  y  approve it
  n  leave it pending (the default; also Enter)
  a  approve it and every remaining item of a kind approved in bulk;
     changed definitions and impersonation are still asked one by one
  s  skip the rest of this server (left pending)
  j  show the full definition as JSON, and ask again
  q  stop: leave everything remaining pending
Approvals are made once every item is decided, each only as it was
shown: an item that changed meanwhile (another etdi approved or revoked)
is not approved and is reported. They are recorded in the history as
etdi pin approve records them.

--yes=CATEGORIES approves, without asking, the items whose every category
is named: new-servers, new-tools, updates, collisions (or an approvable
finding kind). Changed definitions and impersonation are never approved
this way, and a bare --yes is refused: name what you accept.

--json lists what is pending, approving nothing.

Exit codes: 0 when nothing is pending and every server is ok; 13 when
something is still pending; 10, 11, 12 or 14 when a server is blocked by
a security finding (the most severe wins); 1 when a server could not be
checked; 2 a usage error.`,
		Example: `  etdi review
  etdi review --yes=new-servers,new-tools
  etdi review --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := reviewOptions{asJSON: asJSON}
			if cmd.Flags().Changed("yes") {
				if yes == bareYes {
					return usagef("--yes needs the categories to approve, e.g. --yes=new-servers,new-tools; the categories are %s (changed definitions and impersonation are decided one by one, on a terminal)", categoryList(guard.BulkCategories()))
				}
				cats, err := guard.ParseCategories(yes)
				if err != nil {
					return &usageError{err}
				}
				o.yes = cats
			}
			if asJSON && o.yes != nil {
				return usagef("--json lists what is pending and approves nothing: it does not go with --yes")
			}
			o.interactive = o.yes == nil && !asJSON && e.stdinIsTerminal()
			return e.runReview(&sf, &pf, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.policy, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	fl.StringVar(&sf.config, "config", "auto", "a host configuration file, or auto for every one found")
	fl.BoolVar(&sf.project, "project", false, "with --config auto: also start the servers of project-scoped files in the working directory")
	fl.DurationVar(&sf.startTimeout, "start-timeout", defaultStartTimeout, "how long a server may take to answer initialize")
	fl.DurationVar(&sf.timeout, "timeout", defaultFetchTimeout, "how long fetching one server's tools may take in all")
	pf.register(fl, e)
	pf.registerBy(fl)
	fl.StringVar(&yes, "yes", "", "approve without asking the items of these categories: "+categoryList(guard.BulkCategories()))
	fl.Lookup("yes").NoOptDefVal = bareYes
	fl.BoolVar(&asJSON, "json", false, "list what is pending as JSON, approving nothing")
	return cmd
}

// The bounds of listing one server, as etdi check has them.
const (
	defaultStartTimeout = 20 * time.Second
	defaultFetchTimeout = 60 * time.Second
)

func categoryList(cs []guard.Category) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// reviewOptions say how a review decides: by the categories named
// (yes), by asking on a terminal (interactive), or not at all (asJSON,
// or neither: list what is pending).
type reviewOptions struct {
	yes         []guard.Category
	interactive bool
	asJSON      bool
}

// reviewed is every server of one review: its target, its report, and
// what is pending.
type reviewed struct {
	ts      []target
	reps    []*checkReport
	reports []*guard.Report
}

// gather checks every server the flags name, recording findings as
// etdi check does, and approving nothing.
func (e *env) gather(sf *serverFlags, pf *pinFlags) (*reviewed, error) {
	sf.gatePins = pf.path
	sf.launchApproved = pf.launchChecker()
	ts, err := e.targets(sf, nil, -1)
	if err != nil {
		return nil, err
	}
	p, err := loadPolicy(sf.policy)
	if err != nil {
		return nil, err
	}
	var cf cedarFlags
	set, err := cf.load(sf.policy, p)
	if err != nil {
		return nil, err
	}
	rv := &reviewed{ts: ts}
	for i := range ts {
		rep := e.checkTarget(sf, pf, &ts[i], p, set, false, false, false)
		addConfigFindings(rep, &ts[i])
		rv.reps = append(rv.reps, rep)
		if hasError(ts[i].Findings) {
			// An entry that imitates etdi's gate or overrides its files:
			// nothing of what it runs is approved while it stands.
			rv.reports = append(rv.reports, nil)
			continue
		}
		rv.reports = append(rv.reports, rep.guarded)
	}
	return rv, nil
}

// settle puts what Apply found into the servers' reports.
func (rv *reviewed) settle(applied []guard.Applied) {
	for _, a := range applied {
		rep, t := rv.reps[a.Report], &rv.ts[a.Report]
		rv.reports[a.Report] = a.After
		rep.guarded, rep.Tools = a.After, a.After.Tools
		rep.Findings = append(append([]finding.Finding{}, t.Findings...), a.After.Findings...)
		rep.ExitCode = exitFor(rep.Findings)
		if a.Result != nil {
			rep.Approved = append(rep.Approved, a.Result.Approved...)
			if text := recordedInstructions(a.After, a.Result); text != nil {
				rep.InstructionsRecorded = text
			}
		}
	}
}

// where names a server for a person: its entry and host.
func (rv *reviewed) where(i int) string {
	t := &rv.ts[i]
	if t.Entry != nil && t.Entry.Host != "" {
		return t.Name + " (" + t.Entry.Host + ")"
	}
	return t.Label
}

// runReview checks every server, decides what is pending as o says, and
// ends with one line saying where everything stands.
func (e *env) runReview(sf *serverFlags, pf *pinFlags, o reviewOptions) error {
	rv, err := e.gather(sf, pf)
	if err != nil {
		return err
	}
	items := guard.Pending(rv.reports)
	if o.asJSON {
		return e.reviewJSON(rv, items)
	}
	printCompact(e.stdout, rv, false)
	accepted, err := e.decide(rv, items, o)
	if err != nil {
		return err
	}
	return e.applyReview(rv, items, accepted, o)
}

// decide returns the pending items the person accepts: those the named
// categories select, or those they approve on a terminal; otherwise it
// lists them, one a line.
func (e *env) decide(rv *reviewed, items []guard.ReviewItem, o reviewOptions) ([]guard.ReviewItem, error) {
	switch {
	case len(items) == 0:
		return nil, nil
	case o.interactive:
		return e.walkReview(bufio.NewReader(e.stdin), rv, items)
	case o.yes != nil:
		var out []guard.ReviewItem
		for _, it := range items {
			if it.Selected(o.yes) {
				out = append(out, it)
			}
		}
		return out, nil
	}
	for _, it := range items {
		say(e.stdout, "pending %s: %s %s\n", it.Category, rv.where(it.Report), itemText(it))
	}
	return nil, nil
}

// itemText names what a review item decides about.
func itemText(it guard.ReviewItem) string {
	switch {
	case it.Instructions():
		return "the server's instructions"
	case it.Tool == "":
		return "the server"
	}
	return pin.ItemWord(it.Item) + " " + it.Tool
}

// walkReview asks about each item on a terminal.
func (e *env) walkReview(in *bufio.Reader, rv *reviewed, items []guard.ReviewItem) ([]guard.ReviewItem, error) {
	w := &reviewWalk{skipped: map[int]bool{}, shown: map[int]bool{}}
	for k, it := range items {
		if w.skipped[it.Report] || (w.eof && !(w.all && it.Bulk)) {
			continue // skipped, or no answer can come: left pending
		}
		e.showReviewItem(rv, w, k, len(items), it)
		if w.all && it.Bulk {
			say(e.stderr, "approve: yes (all remaining)\n")
			w.accepted = append(w.accepted, it)
			continue
		}
		quit, err := e.askReviewItem(in, rv, w, it)
		if err != nil {
			return nil, err
		}
		if quit {
			break
		}
	}
	return w.accepted, nil
}

// reviewWalk is what walkReview was told so far: the items accepted,
// whether every remaining bulk item is, whether the input ended, the
// reports whose rest was skipped and those whose instructions were
// shown.
type reviewWalk struct {
	accepted       []guard.ReviewItem
	all, eof       bool
	skipped, shown map[int]bool
}

// showReviewItem shows item k of n: where it is (and where the same is),
// its findings, and a new server's instructions before anything of the
// server is asked.
func (e *env) showReviewItem(rv *reviewed, w *reviewWalk, k, n int, it guard.ReviewItem) {
	say(e.stderr, "\n[%d/%d] %s: %s %s\n", k+1, n, it.Category, rv.where(it.Report), itemText(it))
	if len(it.Also) > 0 {
		var also []string
		for _, j := range it.Also {
			also = append(also, rv.where(j))
		}
		say(e.stderr, "  the same in %s\n", strings.Join(also, ", "))
	}
	printFindingsWith(e.stderr, it.Findings, rv.reps[it.Report].defs)
	if it.Category == guard.CategoryNewServers && it.Report < len(rv.reports) && !w.shown[it.Report] {
		r := rv.reports[it.Report]
		if r != nil && r.Observation != nil && r.Comparison != nil {
			// A new server's instructions are approved with it:
			// shown, with any suspicious text, before anything of it
			// is asked.
			e.showInstructions(r.Observation, r.Comparison)
		}
		w.shown[it.Report] = true
	}
}

// askReviewItem decides the item it into w as the answer says (j shows
// the definition and asks again; the end of input answers no, to this
// and to whatever else would be asked). It says whether to quit.
func (e *env) askReviewItem(in *bufio.Reader, rv *reviewed, w *reviewWalk, it guard.ReviewItem) (bool, error) {
	one := ""
	if !it.Bulk {
		one = " (decided on its own)"
	}
	for {
		say(e.stderr, "approve%s? [y]es, [N]o, [a]ll remaining, [s]kip the rest of this server, show the full [j]son, [q]uit: ", one)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			if !errors.Is(err, io.EOF) {
				return false, err
			}
			say(e.stderr, "\n")
			w.eof = true
			return false, nil
		}
		switch a := strings.ToLower(strings.TrimSpace(line)); a {
		case "y", "yes":
			w.accepted = append(w.accepted, it)
		case "a", "all":
			w.all = true
			w.accepted = append(w.accepted, it)
		case "s", "skip":
			w.skipped[it.Report] = true
		case "q", "quit":
			return true, nil
		case "j", "json":
			if d, ok := rv.reps[it.Report].defs[it.Ref]; ok && it.Tool != "" {
				sayJSON(e.stderr, "    ", d.canonical)
			} else {
				say(e.stderr, "    (no definition to show)\n")
			}
			continue
		}
		return false, nil
	}
}

// applyReview approves what was accepted and says what happened and where
// everything stands.
func (e *env) applyReview(rv *reviewed, items, accepted []guard.ReviewItem, o reviewOptions) error {
	applied, err := guard.Apply(e.ctx, rv.reports, accepted)
	rv.settle(applied)
	if err != nil {
		return e.guardError(err)
	}
	approved := 0
	for _, a := range applied {
		if a.Result == nil {
			continue
		}
		for _, p := range a.Result.Approved {
			approved++
			say(e.stdout, "%s\n", approvedLine(p))
		}
		if text := rv.reps[a.Report].InstructionsRecorded; text != nil {
			say(e.stdout, "recorded the instructions of %s as approved:\n", rv.reps[a.Report].Server)
			sayBlock(e.stdout, "    ", *text)
		}
		for _, r := range a.Result.Refused {
			say(e.stdout, "NOT approved %s %s (%s): %s\n", rv.where(a.Report), r.Tool, r.Kind, r.Reason)
		}
		if len(a.Withdrawn) > 0 {
			say(e.stderr, "etdi: %s changed while you decided; nothing of it was approved: run etdi review again\n", rv.where(a.Report))
		}
	}
	left := guard.Pending(rv.reports)
	if o.yes != nil {
		for _, it := range left {
			say(e.stdout, "pending %s: %s %s\n", it.Category, rv.where(it.Report), itemText(it))
		}
	}
	code := combineExit(rv.reps)
	say(e.stderr, "etdi: review: %d approved, %d pending, %s\n", approved, len(left), summarize(rv.reps))
	if len(left) > 0 {
		fmt.Fprint(e.stderr, decideHint("decide the rest", left))
	}
	if code != exitOK {
		return &exitCodeError{code}
	}
	return nil
}

// pendingCategories are the categories of items approved in bulk that
// are still pending.
func pendingCategories(items []guard.ReviewItem) []guard.Category {
	var out []guard.Category
	for _, c := range guard.BulkCategories() {
		for _, it := range items {
			if it.Bulk && it.Category == c {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// decideHint is the hint for what a review left pending: etdi review on a
// terminal, and, when some of it may be approved in bulk, the exact
// --yes=CATEGORIES that would (one argument, no spaces).
func decideHint(lead string, left []guard.ReviewItem) string {
	hint := "etdi: hint: " + lead + " with etdi review on a terminal"
	if cs := pendingCategories(left); len(cs) > 0 {
		s := make([]string, len(cs))
		for i, c := range cs {
			s[i] = string(c)
		}
		hint += ", or etdi review --yes=" + strings.Join(s, ",") + " for what you accept"
	}
	return hint + "\n"
}

// reviewJSON lists what is pending as JSON.
func (e *env) reviewJSON(rv *reviewed, items []guard.ReviewItem) error {
	type jsonItem struct {
		Target string `json:"target"`
		guard.ReviewItem
		Also []string `json:"also,omitempty"`
	}
	out := struct {
		SchemaVersion int            `json:"schemaVersion"`
		Pending       []jsonItem     `json:"pending"`
		Summary       checkSummary   `json:"summary"`
		Servers       []*checkReport `json:"servers"`
		ExitCode      int            `json:"exitCode"`
	}{SchemaVersion: jsonSchemaVersion, Pending: []jsonItem{}, Summary: summarize(rv.reps), Servers: rv.reps, ExitCode: combineExit(rv.reps)}
	for _, it := range items {
		j := jsonItem{Target: rv.reps[it.Report].Target, ReviewItem: it}
		for _, k := range it.Also {
			j.Also = append(j.Also, rv.reps[k].Target)
		}
		out.Pending = append(out.Pending, j)
	}
	if err := e.writeJSON(out); err != nil {
		return err
	}
	if out.ExitCode != exitOK {
		return &exitCodeError{out.ExitCode}
	}
	return nil
}

// printCompact prints one line per server: its entry, host, identity,
// tool count and state, in columns; then, in full, only what blocks a
// server (pending decisions are shown by the review).
func printCompact(w io.Writer, rv *reviewed, wrapState bool) {
	rows := make([][5]string, len(rv.reps))
	var width [4]int
	for i, rep := range rv.reps {
		t := &rv.ts[i]
		host := "-"
		if t.Entry != nil && t.Entry.Host != "" {
			host = t.Entry.Host
		}
		id := rep.Server
		if id == "" {
			id = "-"
		}
		tools := 0
		for _, s := range rep.Tools {
			if s.Item == pin.ItemTool && s.Status != pin.StatusRemoved {
				tools++
			}
		}
		rows[i] = [5]string{termtext.Escape(t.Name), termtext.Escape(host), termtext.Escape(id), fmt.Sprintf("%d tools", tools), serverState(rep, wrapState)}
		if t.Name == "" {
			rows[i][0] = termtext.Escape(t.Label)
		}
		for c := range width {
			width[c] = max(width[c], utf8.RuneCountInString(rows[i][c]))
		}
	}
	for _, r := range rows {
		// Every cell is escaped already: written as it is.
		fmt.Fprintf(w, "  %-*s  %-*s  %-*s  %*s  %s\n", width[0], r[0], width[1], r[1], width[2], r[2], width[3], r[3], r[4])
	}
	for _, rep := range rv.reps {
		if rep.Error == "" && !blockedBy(rep) {
			continue
		}
		say(w, "== %s\n", rep.Target)
		if rep.Error != "" {
			say(w, "ERROR: %s\n", rep.Error)
			continue
		}
		var errs []finding.Finding
		for _, f := range rep.Findings {
			if f.Severity == finding.Error {
				if _, ok := guard.CategoryOf(f); !ok {
					errs = append(errs, f)
				}
			}
		}
		printFindingsWith(w, errs, rep.defs)
	}
}

// blockedBy reports whether a server has an error finding that no
// approval resolves.
func blockedBy(rep *checkReport) bool {
	for _, f := range rep.Findings {
		if f.Severity == finding.Error {
			if _, ok := guard.CategoryOf(f); !ok {
				return true
			}
		}
	}
	return false
}

// serverState is a server's state in one escaped phrase.
func serverState(rep *checkReport, wrapState bool) string {
	wrapped := ""
	if wrapState && rep.Error == "" && !(rep.Disabled && rep.HostHonoursDisabled == "yes") {
		wrapped = ", not wrapped"
		if rep.Wrapped {
			wrapped = ", wrapped"
		}
	}
	switch {
	case rep.Disabled && rep.HostHonoursDisabled == "yes":
		return "disabled: not started"
	case rep.Error != "":
		first, _, _ := strings.Cut(rep.Error, "\n")
		if utf8.RuneCountInString(first) > 80 {
			first = string([]rune(first)[:80]) + "..."
		}
		return "NOT CHECKED (" + termtext.Escape(first) + ")"
	case rep.ExitCode == exitOK && len(rep.Approved) > 0:
		return fmt.Sprintf("ok (%d approved now)%s", len(rep.Approved), wrapped)
	case rep.ExitCode == exitOK:
		return "ok" + wrapped
	}
	counts := map[string]int{}
	var order []string
	for _, f := range rep.Findings {
		if f.Severity != finding.Error {
			continue
		}
		what := string(f.Kind)
		if c, ok := guard.CategoryOf(f); ok {
			what = string(c)
		}
		if counts[what] == 0 {
			order = append(order, what)
		}
		counts[what]++
	}
	var parts []string
	for _, w := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[w], w))
	}
	label := "NEEDS APPROVAL"
	if newServer(rep) {
		label = "NEW SERVER, needs approval"
	}
	if rep.ExitCode != exitApproval {
		label = fmt.Sprintf("BLOCKED (exit %d)", rep.ExitCode)
	}
	return termtext.Escape(label + ": " + strings.Join(parts, ", ") + wrapped)
}

// newServer reports whether nothing of the server was approved yet.
func newServer(rep *checkReport) bool {
	for _, t := range rep.Tools {
		if t.Status != pin.StatusNew {
			return false
		}
	}
	return len(rep.Tools) > 0
}
