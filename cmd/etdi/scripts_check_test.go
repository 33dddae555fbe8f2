package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fixtures of the scripts of etdi check (check_, live_, sarif_,
// capabilities_ and scopes_). Most read what etdi check printed where a
// pattern on its text would say less than the decoded report: those read
// the standard output of the command before and leave it in place,
// unless they say they print.
//
// Commands:
//
//	check-kinds WANT            the --json report of one server has exactly the error
//	                            findings WANT, comma-separated in order, a prompt's,
//	                            resource's or template's as KIND:ITEM ('' for none)
//	check-listed ITEM N [FIRST LAST]
//	                            the first server of the --json report lists N items of
//	                            ITEM (tool, prompt, resource, resourceTemplate), the
//	                            first named FIRST and the last LAST
//	check-tools [!]NAME...      the --json report lists (!: does not list) each tool NAME
//	check-server NAME KEY=VALUE...
//	                            the server of the --json report whose entry is NAME
//	                            (or its only server, for NAME '') has
//	                            server=VALUE, exit=VALUE, and an error containing
//	                            error=VALUE (error= for none)
//	check-approve-listed ARGS...
//	                            runs etdi pin approve with a --tool for each item the
//	                            --json report lists, then ARGS; exit 0 expected
//	check-sarif [FILE]          the SARIF log (FILE, or standard output) is valid under
//	                            the SARIF 2.1.0 schema (testdata/sarif) and has what
//	                            GitHub code scanning needs: a rule for every finding
//	                            kind, results of declared rules only, a message,
//	                            file, start line and fingerprints on each result, no
//	                            empty properties, an absolute file: %SRCROOT%
//	check-sarif-result RULE TOOL KEY=VALUE...
//	                            the SARIF log has a result of RULE for TOOL ('' for any
//	                            rule, any tool) with each uri=, line=, base= (uriBaseId), level=,
//	                            kind= (its finding's kind, '' for none), fqn= (last
//	                            logical location), root= (%SRCROOT%'s URI), a message
//	                            containing message= and not nomessage=, hidden=
//	                            (yes: a hidden character in the message or the logical
//	                            locations; no: none) and placeholder= (yes: a
//	                            single-brace {0} in the message; no: none); ! none such
//	check-sarif-count N [RULE [KEY=VALUE...]]
//	                            the SARIF log has N results (of RULE, each with the
//	                            KEY=VALUE of check-sarif-result)
//	check-subst FILE VAR...     replaces $VAR and ${VAR} in FILE with the value of each
//	                            VAR named (and only those: a host configuration's own
//	                            ${...} stay)
//	check-terminal ARGS...      runs ARGS on a terminal (util-linux script) and sets
//	                            standard output to all it printed; exit 0 expected
//	check-only-colour           standard output is coloured, with no escape sequence
//	                            but etdi's colour codes
//	check-history-since FILE KIND:TOOL:SEVERITY...
//	                            etdi audit export --json printed the records of FILE
//	                            (an earlier export) and after them exactly these
//	check-same-line FILE PREFIX...
//	                            the line of standard output starting with each PREFIX
//	                            is the one of FILE that does
//	check-tamper-bundle IN OUT  writes OUT, the bundle IN with the first bytes of its
//	                            signature replaced: a signature that does not verify
//	check-realpath VAR PATH     sets VAR to PATH made absolute, its symbolic links
//	                            resolved, as etdi names a file in a file: URI
//	check-httpeverything VAR    starts server-everything over Streamable HTTP on
//	                            127.0.0.1 until the script ends, and sets VAR to its URL
//	check-sarif-fingerprints    prints each result of the SARIF log as "RULE WHERE
//	                            FINGERPRINT", sorted, WHERE its tool (or server for one
//	                            a server), after checking that no two share one or a
//	                            rule and a place, and that each is "HASH:N" in both
//	                            partial fingerprints
func init() {
	scriptCmds["check-kinds"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: check-kinds WANT")
		}
		co := scriptCheckReport(ts)
		if len(co.Servers) != 1 {
			ts.Fatalf("%d servers in the report, want 1", len(co.Servers))
		}
		var k []string
		for _, f := range co.Servers[0].Findings {
			if f.Severity != "error" {
				continue
			}
			if f.Item != "" {
				k = append(k, string(f.Kind)+":"+f.Item)
			} else {
				k = append(k, string(f.Kind))
			}
		}
		if got := strings.Join(k, ","); got != args[0] {
			ts.Fatalf("error findings %q, want %q", got, args[0])
		}
	}
	scriptCmds["check-listed"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || (len(args) != 2 && len(args) != 4) {
			ts.Fatalf("usage: check-listed ITEM N [FIRST LAST]")
		}
		co := scriptCheckReport(ts)
		if len(co.Servers) == 0 {
			ts.Fatalf("no server in the report")
		}
		item := strings.TrimPrefix(args[0], "tool")
		var names []string
		for _, t := range co.Servers[0].Tools {
			if t.Item == item {
				names = append(names, t.Name)
			}
		}
		if strconv.Itoa(len(names)) != args[1] {
			ts.Fatalf("%d items of %s listed, want %s", len(names), args[0], args[1])
		}
		if len(args) == 4 && len(names) > 0 && (names[0] != args[2] || names[len(names)-1] != args[3]) {
			ts.Fatalf("%s listed from %s to %s, want %s to %s", args[0], names[0], names[len(names)-1], args[2], args[3])
		}
	}
	scriptCmds["check-tools"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: check-tools [!]NAME...")
		}
		var names []string
		for _, s := range scriptCheckReport(ts).Servers {
			for _, t := range s.Tools {
				if t.Item == "" {
					names = append(names, t.Name)
				}
			}
		}
		for _, a := range args {
			name, not := strings.CutPrefix(a, "!")
			if slices.Contains(names, name) == not {
				ts.Fatalf("tool %s listed: %v, want %v (tools %v)", name, not, !not, names)
			}
		}
	}
	scriptCmds["check-server"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: check-server NAME KEY=VALUE...")
		}
		var s *checkReport
		servers := scriptCheckReport(ts).Servers
		for _, c := range servers {
			if f := strings.Fields(c.Target); len(f) > 0 && f[0] == args[0] {
				s = c
			}
		}
		if args[0] == "" && len(servers) == 1 {
			s = servers[0]
		}
		if s == nil {
			ts.Fatalf("no server %s in the report", args[0])
		}
		for _, kv := range args[1:] {
			k, v, _ := strings.Cut(kv, "=")
			var ok bool
			switch k {
			case "server":
				ok = s.Server == v
			case "exit":
				ok = strconv.Itoa(s.ExitCode) == v
			case "error":
				ok = (v == "" && s.Error == "") || (v != "" && strings.Contains(s.Error, v))
			default:
				ts.Fatalf("check-server: unknown key %s", k)
			}
			if !ok {
				ts.Fatalf("server %s: %s is not %q: server %q, exit %d, error %q", args[0], k, v, s.Server, s.ExitCode, s.Error)
			}
		}
	}
	scriptCmds["check-approve-listed"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg {
			ts.Fatalf("unsupported: ! check-approve-listed")
		}
		approve := []string{"pin", "approve"}
		for _, s := range scriptCheckReport(ts).Servers {
			for _, t := range s.Tools {
				approve = append(approve, "--tool", pin.ItemRef(t.Item, t.Name))
			}
		}
		if len(approve) == 2 {
			ts.Fatalf("the report lists nothing to approve")
		}
		if err := ts.Exec("etdi", append(approve, args...)...); err != nil {
			ts.Fatalf("etdi pin approve: %v", err)
		}
	}
	scriptCmds["check-sarif"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) > 1 {
			ts.Fatalf("usage: check-sarif [FILE]")
		}
		out := ts.ReadFile("stdout")
		if len(args) == 1 {
			out = ts.ReadFile(args[0])
		}
		if problems := sarifProblems(out); len(problems) > 0 {
			ts.Fatalf("not a SARIF log code scanning takes:\n%s", strings.Join(problems, "\n"))
		}
	}
	scriptCmds["check-sarif-result"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: check-sarif-result RULE TOOL KEY=VALUE...")
		}
		doc := scriptSARIF(ts)
		var seen []string
		for _, r := range doc.Runs[0].Results {
			if (args[0] != "" && r.RuleID != args[0]) || (args[1] != "" && r.tool() != args[1]) {
				continue
			}
			miss := sarifResultMismatch(doc, r, args[2:])
			if miss == "" {
				if neg {
					ts.Fatalf("a result of rule %q for tool %q with %v", args[0], args[1], args[2:])
				}
				return
			}
			if miss == "bad key" {
				ts.Fatalf("check-sarif-result: unknown key in %v", args[2:])
			}
			seen = append(seen, miss)
		}
		if !neg {
			ts.Fatalf("no result of rule %q for tool %q with %v; of that rule and tool:\n%s", args[0], args[1], args[2:], strings.Join(seen, "\n"))
		}
	}
	scriptCmds["check-sarif-count"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: check-sarif-count N [RULE [KEY=VALUE...]]")
		}
		doc := scriptSARIF(ts)
		n := 0
		for _, r := range doc.Runs[0].Results {
			if len(args) > 1 && r.RuleID != args[1] {
				continue
			}
			switch miss := sarifResultMismatch(doc, r, args[min(len(args), 2):]); miss {
			case "":
				n++
			case "bad key":
				ts.Fatalf("check-sarif-count: unknown key in %v", args[2:])
			}
		}
		if strconv.Itoa(n) != args[0] {
			ts.Fatalf("%d results of %v, want %s", n, args[1:], args[0])
		}
	}
	scriptCmds["check-subst"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: check-subst FILE VAR...")
		}
		text := ts.ReadFile(args[0])
		for _, v := range args[1:] {
			text = strings.NewReplacer("${"+v+"}", ts.Getenv(v), "$"+v, ts.Getenv(v)).Replace(text)
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(text), 0o644))
	}
	scriptCmds["check-terminal"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: check-terminal ARGS...")
		}
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		err := ts.Exec("script", "-qec", strings.Join(q, " "), "/dev/null")
		ts.Check(err)
	}
	scriptCmds["check-only-colour"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: check-only-colour")
		}
		out := ts.ReadFile("stdout")
		own := strings.NewReplacer("\x1b[0m", "", "\x1b[1m", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[1;31m", "")
		if !strings.ContainsRune(out, 0x1b) {
			ts.Fatalf("no colour at all")
		}
		if rest := own.Replace(out); strings.ContainsRune(rest, 0x1b) {
			ts.Fatalf("an escape sequence that is not etdi's colour: %q", rest)
		}
	}
	scriptCmds["check-history-since"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: check-history-since FILE KIND:TOOL:SEVERITY...")
		}
		before := ts.ReadFile(args[0])
		now := ts.ReadFile("stdout")
		rest, ok := strings.CutPrefix(now, before)
		if !ok {
			ts.Fatalf("the history does not start with the records of %s", args[0])
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(rest), "\n") {
			if line == "" {
				continue
			}
			var rec pin.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				ts.Fatalf("not a record: %v: %s", err, line)
			}
			got = append(got, fmt.Sprintf("%s:%s:%s", rec.Kind, rec.Tool, rec.Severity))
		}
		if !slices.Equal(got, args[1:]) {
			ts.Fatalf("records since %s: %q, want %q", args[0], got, args[1:])
		}
	}
	scriptCmds["check-same-line"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: check-same-line FILE PREFIX...")
		}
		line := func(text, prefix string) string {
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, prefix) {
					return l
				}
			}
			ts.Fatalf("no line starting with %q", prefix)
			return ""
		}
		for _, prefix := range args[1:] {
			if a, b := line(ts.ReadFile("stdout"), prefix), line(ts.ReadFile(args[0]), prefix); a != b {
				ts.Fatalf("%q, in %s %q", a, args[0], b)
			}
		}
	}
	scriptCmds["check-tamper-bundle"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: check-tamper-bundle IN OUT")
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), tamperedBundle([]byte(ts.ReadFile(args[0]))), 0o644))
	}
	scriptCmds["check-realpath"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: check-realpath VAR PATH")
		}
		ts.Setenv(args[0], resolvedPath(ts.MkAbs(args[1])))
	}
	scriptCmds["check-httpeverything"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: check-httpeverything VAR")
		}
		url, stop, err := httpEverything()
		ts.Check(err)
		ts.Defer(stop)
		ts.Setenv(args[0], url)
	}
	scriptCmds["check-sarif-fingerprints"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: check-sarif-fingerprints")
		}
		doc := scriptSARIF(ts)
		var lines []string
		by := map[string]string{}
		for _, r := range doc.Runs[0].Results {
			where := r.tool()
			if where == "" && len(r.Locations) > 0 && len(r.Locations[0].LogicalLocations) > 0 {
				where = r.Locations[0].LogicalLocations[0].Name
			}
			fp := r.PartialFingerprints[sarifLineHash]
			if fp != r.PartialFingerprints[sarifFingerprint] || !sarifFingerprintForm.MatchString(fp) {
				ts.Fatalf("%s %s: fingerprints %v", r.RuleID, where, r.PartialFingerprints)
			}
			if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, r.RuleID+" "+where+" ") }) {
				ts.Fatalf("two results of %s for %s", r.RuleID, where)
			}
			if other, dup := by[fp]; dup {
				ts.Fatalf("%s %s and %s share fingerprint %s", r.RuleID, where, other, fp)
			}
			by[fp] = r.RuleID + " " + where
			lines = append(lines, r.RuleID+" "+where+" "+fp)
		}
		slices.Sort(lines)
		for _, l := range lines {
			fmt.Fprintln(ts.Stdout(), l)
		}
	}
}

var sarifFingerprintForm = regexp.MustCompile(`^[0-9a-f]{32}:[1-9][0-9]*$`)

// scriptCheckReport decodes the standard output of the command before as a check
// --json report.
func scriptCheckReport(ts *testscript.TestScript) checkOutput {
	var co checkOutput
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &co); err != nil {
		ts.Fatalf("not a check --json report: %v", err)
	}
	return co
}

// scriptSARIF decodes the standard output of the command before as a SARIF
// log of one run.
func scriptSARIF(ts *testscript.TestScript) sarifOut {
	var doc sarifOut
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &doc); err != nil || len(doc.Runs) != 1 {
		ts.Fatalf("not a SARIF log of one run: %v", err)
	}
	return doc
}

// sarifResultMismatch says how r differs from the KEY=VALUE pairs want,
// "" if it does not, and "bad key" for a key it does not know.
func sarifResultMismatch(doc sarifOut, r sarifOutResult, want []string) string {
	for _, kv := range want {
		k, v, _ := strings.Cut(kv, "=")
		var got string
		switch k {
		case "uri":
			got = r.uri()
		case "line":
			got = strconv.Itoa(r.line())
		case "base":
			if len(r.Locations) > 0 && r.Locations[0].PhysicalLocation != nil {
				got = r.Locations[0].PhysicalLocation.ArtifactLocation.URIBaseID
			}
		case "level":
			got = r.Level
		case "kind": // '' for no properties at all
			if r.Properties != nil {
				got = cmp.Or(string(r.Properties.Kind), "(properties without a kind)")
			}
		case "fqn":
			if len(r.Locations) > 0 {
				if ll := r.Locations[0].LogicalLocations; len(ll) > 0 {
					got = ll[len(ll)-1].FullyQualifiedName
				}
			}
		case "root":
			got = doc.Runs[0].OriginalURIBaseIDs[sarifSrcRoot].URI
		case "message":
			if got = r.Message.Text; strings.Contains(got, v) {
				got = v
			}
		case "nomessage":
			if got = r.Message.Text; !strings.Contains(got, v) {
				got = v
			}
		case "hidden":
			got = "no"
			texts := []string{r.Message.Text}
			for _, l := range r.Locations {
				for _, ll := range l.LogicalLocations {
					texts = append(texts, ll.Name, ll.FullyQualifiedName)
				}
			}
			for _, t := range texts {
				if strings.IndexFunc(t, termtext.Hidden) >= 0 {
					got = "yes"
				}
			}
		case "placeholder":
			if got = "no"; singleBrace.MatchString(r.Message.Text) {
				got = "yes"
			}
		default:
			return "bad key"
		}
		if got != v {
			return fmt.Sprintf("%s is %q, not %q", k, got, v)
		}
	}
	return ""
}

var sarifCompiled struct {
	once sync.Once
	s    *jsonschema.Schema
	err  error
}

// sarifProblems returns what keeps out from being a SARIF 2.1.0 log
// valid under the official schema that GitHub code scanning takes.
func sarifProblems(out string) []string {
	sarifCompiled.once.Do(func() {
		abs, err := filepath.Abs(sarifSchemaFile)
		if err != nil {
			sarifCompiled.err = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		sarifCompiled.s, sarifCompiled.err = c.Compile(abs)
	})
	if sarifCompiled.err != nil {
		return []string{sarifCompiled.err.Error()}
	}
	var p []string
	if err := validJSON(sarifCompiled.s, out); err != nil {
		p = append(p, fmt.Sprintf("not valid under %s: %v", filepath.Base(sarifSchemaFile), err))
	}
	var doc sarifOut
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Runs) != 1 {
		return append(p, fmt.Sprintf("not one SARIF run: %v", err))
	}
	var generic any
	json.Unmarshal([]byte(out), &generic)
	if at := emptyProperties(generic, ""); at != "" {
		p = append(p, "an empty properties object at "+at)
	}
	run := doc.Runs[0]
	if u := run.OriginalURIBaseIDs[sarifSrcRoot].URI; !strings.HasPrefix(u, "file:///") || !strings.HasSuffix(u, "/") {
		p = append(p, fmt.Sprintf("%%SRCROOT%% is %q, want an absolute file: URI ending in /", u))
	}
	rules := map[string]bool{}
	for _, r := range run.Tool.Driver.Rules {
		rules[r.ID] = true
	}
	for _, k := range finding.Kinds() {
		if !rules["etdi/"+string(k)] || k.About() == "" {
			p = append(p, fmt.Sprintf("kind %s has no rule", k))
		}
	}
	for _, r := range run.Results {
		if !rules[r.RuleID] {
			p = append(p, "result of undeclared rule "+r.RuleID)
		}
		if r.Message.Text == "" || r.uri() == "" || r.line() < 1 {
			p = append(p, fmt.Sprintf("result %s without message, artifact or start line: %+v", r.RuleID, r))
		}
		if u := r.uri(); strings.Contains(u, "://") && !strings.HasPrefix(u, "file:///") {
			p = append(p, fmt.Sprintf("result %s located at %s: code scanning rejects a scheme other than the root's", r.RuleID, u))
		}
		if r.PartialFingerprints[sarifLineHash] == "" || r.PartialFingerprints[sarifFingerprint] == "" {
			p = append(p, fmt.Sprintf("result %s without partial fingerprints: %v", r.RuleID, r.PartialFingerprints))
		}
	}
	return p
}
