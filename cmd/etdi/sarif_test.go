package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
)

const sarifSchemaFile = "../../testdata/sarif/sarif-schema-2.1.0.json"

// sarifOut is what the tests read of etdi check --sarif.
type sarifOut struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID               string `json:"id"`
					ShortDescription struct {
						Text string `json:"text"`
					} `json:"shortDescription"`
					FullDescription struct {
						Text string `json:"text"`
					} `json:"fullDescription"`
					Help struct {
						Text     string `json:"text"`
						Markdown string `json:"markdown"`
					} `json:"help"`
					HelpURI              string `json:"helpUri"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
					Properties struct {
						Tags             []string `json:"tags"`
						SecuritySeverity string   `json:"security-severity"`
						ExitCode         int      `json:"exitCode"`
					} `json:"properties"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		OriginalURIBaseIDs map[string]struct {
			URI string `json:"uri"`
		} `json:"originalUriBaseIds"`
		Results []sarifOutResult `json:"results"`
	} `json:"runs"`
}

type sarifOutResult struct {
	RuleID  string `json:"ruleId"`
	Level   string `json:"level"`
	Message struct {
		Text string `json:"text"`
	} `json:"message"`
	Locations []struct {
		PhysicalLocation *struct {
			ArtifactLocation struct {
				URI       string `json:"uri"`
				URIBaseID string `json:"uriBaseId"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine int `json:"startLine"`
			} `json:"region"`
		} `json:"physicalLocation"`
		LogicalLocations []struct {
			Name               string `json:"name"`
			FullyQualifiedName string `json:"fullyQualifiedName"`
		} `json:"logicalLocations"`
	} `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          *finding.Finding  `json:"properties"`
}

func (r sarifOutResult) uri() string {
	if len(r.Locations) == 0 || r.Locations[0].PhysicalLocation == nil {
		return ""
	}
	return r.Locations[0].PhysicalLocation.ArtifactLocation.URI
}

func (r sarifOutResult) line() int {
	if len(r.Locations) == 0 || r.Locations[0].PhysicalLocation == nil {
		return 0
	}
	return r.Locations[0].PhysicalLocation.Region.StartLine
}

func (r sarifOutResult) tool() string {
	if len(r.Locations) == 0 || len(r.Locations[0].LogicalLocations) < 2 {
		return ""
	}
	return r.Locations[0].LogicalLocations[1].Name
}

// sarifEnv is a client with an echo server in a host configuration inside a
// repository, and a signed bundle with saved listings.
type sarifEnv struct {
	*pinEnv
	bin string
}

func newSarifEnv(t *testing.T) *sarifEnv {
	s := &sarifEnv{newPinEnv(t), echoServer(t)}
	s.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	s.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "v1.manifest.json")
	if err := os.MkdirAll(filepath.Join(s.dir, "ci dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

type echoEntry struct{ name, tool, descFrom, instrFrom, command string }

// writeEntries writes ci dir/mcp.json with one echo server per entry, one
// member per line, and returns the line of each entry.
func (s *sarifEnv) writeEntries(entries ...echoEntry) map[string]int {
	var b strings.Builder
	b.WriteString("{\n  // the servers this repository uses\n  \"mcpServers\": {\n")
	lines := map[string]int{}
	for i, e := range entries {
		cmd := e.command
		if cmd == "" {
			cmd = s.bin
		}
		env := map[string]string{"ECHO_TOOL": e.tool}
		if e.descFrom != "" {
			env["ECHO_DESCRIPTION_FROM"] = e.descFrom
		}
		if e.instrFrom != "" {
			env["ECHO_INSTRUCTIONS_FROM"] = e.instrFrom
		}
		ej, _ := json.Marshal(env)
		lines[e.name] = 4 + 4*i
		fmt.Fprintf(&b, "    %q: {\n      \"command\": %q,\n      \"env\": %s\n    }", e.name, cmd, ej)
		if i < len(entries)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  }\n}\n")
	s.write("ci dir/mcp.json", b.String())
	// The lines are where the entries really are.
	text := strings.Split(b.String(), "\n")
	for name, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(text[l-1]), strconv.Quote(name)+":") {
			s.t.Fatalf("entry %s is not on line %d:\n%s", name, l, b.String())
		}
	}
	return lines
}

// sarif runs etdi check --sarif, expects exit code, validates the output
// against the SARIF 2.1.0 schema and code scanning's needs, and returns it.
func (s *sarifEnv) sarif(code int, args ...string) sarifOut {
	s.t.Helper()
	r := s.run(append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--sarif"}, args...)...)
	if r.code != code {
		s.t.Fatalf("etdi check --sarif %v: exit %d, want %d\n%s%s", args, r.code, code, r.stdout, r.stderr)
	}
	return checkSARIF(s.t, r.stdout)
}

// checkSARIF validates a SARIF log against the official schema and what
// GitHub code scanning requires of it.
func checkSARIF(t *testing.T, out string) sarifOut {
	t.Helper()
	validateAgainst(t, sarifSchemaFile, "etdi check --sarif", out)
	var doc sarifOut
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("not one SARIF run: %v\n%.2000s", err, out)
	}
	var generic any
	json.Unmarshal([]byte(out), &generic)
	if p := emptyProperties(generic, ""); p != "" {
		t.Errorf("an empty properties object at %s", p)
	}
	run := doc.Runs[0]
	if u := run.OriginalURIBaseIDs[sarifSrcRoot].URI; !strings.HasPrefix(u, "file:///") || !strings.HasSuffix(u, "/") {
		t.Errorf("%%SRCROOT%% is %q, want an absolute file: URI ending in /", u)
	}
	rules := map[string]bool{}
	for _, r := range run.Tool.Driver.Rules {
		rules[r.ID] = true
	}
	for _, r := range run.Results {
		if !rules[r.RuleID] {
			t.Errorf("result of undeclared rule %s", r.RuleID)
		}
		if r.Message.Text == "" || r.uri() == "" || r.line() < 1 {
			t.Errorf("result %s without message, artifact or start line: %+v", r.RuleID, r)
		}
		if u := r.uri(); strings.Contains(u, "://") && !strings.HasPrefix(u, "file:///") {
			t.Errorf("result %s located at %s: code scanning rejects a scheme other than the root's", r.RuleID, u)
		}
		if r.PartialFingerprints[sarifLineHash] == "" || r.PartialFingerprints[sarifFingerprint] == "" {
			t.Errorf("result %s without partial fingerprints: %v", r.RuleID, r.PartialFingerprints)
		}
	}
	return doc
}

// emptyProperties returns the path of an empty "properties" object in v.
func emptyProperties(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if m, ok := c.(map[string]any); ok && k == "properties" && len(m) == 0 {
				return path + "/" + k
			}
			if p := emptyProperties(c, path+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for i, c := range x {
			if p := emptyProperties(c, fmt.Sprintf("%s/%d", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func results(doc sarifOut) []sarifOutResult { return doc.Runs[0].Results }

func findResult(t *testing.T, doc sarifOut, rule, tool string) sarifOutResult {
	t.Helper()
	for _, r := range results(doc) {
		if r.RuleID == rule && (tool == "" || r.tool() == tool) {
			return r
		}
	}
	t.Fatalf("no %s result for %q in %+v", rule, tool, results(doc))
	return sarifOutResult{}
}

// Every result kind code scanning will show, from a host configuration, a
// saved listing, a bundle and a live server: each valid SARIF 2.1.0, each
// located at its file (the configuration entry's line) relative to the
// repository root, each fingerprinted.
func TestSARIFLocationsAndSchema(t *testing.T) {
	s := newSarifEnv(t)
	lines := s.writeEntries(echoEntry{name: "alpha", tool: "alpha_echo"}, echoEntry{name: "broken", tool: "x", command: "/nonexistent/etdi-sarif-missing"})
	cfg := []string{"--config", "ci dir/mcp.json"}

	// A new tool (and the unsigned warning) and a server that cannot be
	// started, each at its entry.
	doc := s.sarif(exitError, cfg...)
	nt := findResult(t, doc, "etdi/new_tool", "alpha_echo")
	er := findResult(t, doc, "etdi/error", "")
	un := findResult(t, doc, "etdi/unsigned_tool", "")
	for _, c := range []struct {
		r    sarifOutResult
		line int
	}{{nt, lines["alpha"]}, {un, lines["alpha"]}, {er, lines["broken"]}} {
		loc := c.r.Locations[0].PhysicalLocation
		if loc.ArtifactLocation.URI != "ci%20dir/mcp.json" || loc.ArtifactLocation.URIBaseID != sarifSrcRoot || loc.Region.StartLine != c.line {
			t.Errorf("%s located at %+v, want ci%%20dir/mcp.json line %d from %%SRCROOT%%", c.r.RuleID, *loc, c.line)
		}
	}
	if nt.Level != "error" || un.Level != "warning" || er.Level != "error" || er.Properties != nil || nt.Properties == nil || nt.Properties.Kind != finding.NewTool {
		t.Errorf("levels or properties: new_tool %s %+v, unsigned_tool %s, error %s %+v", nt.Level, nt.Properties, un.Level, er.Level, er.Properties)
	}

	// Approved, then changed: a rug pull at the entry.
	s.sarif(exitError, append(cfg, "--yes")...)
	s.writeEntries(echoEntry{name: "alpha", tool: "alpha_echo", descFrom: "ECHO_TOOL"}, echoEntry{name: "broken", tool: "x", command: "/nonexistent/etdi-sarif-missing"})
	doc = s.sarif(exitRugPull, cfg...)
	if rp := findResult(t, doc, "etdi/rug_pull", "alpha_echo"); rp.line() != lines["alpha"] || rp.uri() != "ci%20dir/mcp.json" {
		t.Errorf("rug pull at %s:%d", rp.uri(), rp.line())
	}

	// A saved listing against a signed bundle: the listing's file.
	s.ok(s.check("w.etdi.json", "live-ok.json", "--yes")...)
	doc = s.sarif(exitRugPull, "--bundle", "w.etdi.json", "--tools", "live-rugpull.json")
	for _, rule := range []string{"etdi/definition_changed", "etdi/rug_pull"} {
		if r := findResult(t, doc, rule, "get_weather"); r.uri() != "live-rugpull.json" || r.line() != 1 {
			t.Errorf("%s at %s:%d, want live-rugpull.json:1", rule, r.uri(), r.line())
		}
	}

	// A bundle whose signature does not verify: the bundle's file.
	s.writeTamperedBundle("bad.etdi.json")
	doc = s.sarif(exitSignature, "--bundle", "bad.etdi.json")
	if r := findResult(t, doc, "etdi/signature_invalid", ""); r.uri() != "bad.etdi.json" || r.Level != "error" {
		t.Errorf("signature_invalid at %s (%s)", r.uri(), r.Level)
	}

	// A live server has no file: the trust policy it was checked against.
	doc = s.sarif(exitApproval, "--server", "--", s.bin)
	if r := findResult(t, doc, "etdi/new_tool", "echo"); r.uri() != "trust.json" || r.line() != 1 {
		t.Errorf("live server's new tool at %s:%d, want trust.json:1", r.uri(), r.line())
	}

	// Another root: locations relative to it; a file outside it: an
	// absolute file: URI, without a base.
	doc = s.sarif(exitRugPull, append([]string{"--sarif-root", "ci dir"}, cfg...)...)
	if r := findResult(t, doc, "etdi/rug_pull", ""); r.uri() != "mcp.json" || r.Locations[0].PhysicalLocation.ArtifactLocation.URIBaseID != sarifSrcRoot {
		t.Errorf("under --sarif-root 'ci dir': %s", r.uri())
	}
	elsewhere := t.TempDir()
	doc = s.sarif(exitRugPull, append([]string{"--sarif-root", elsewhere}, cfg...)...)
	want := "file://" + filepath.ToSlash(resolvedPath(filepath.Join(s.dir, "ci dir", "mcp.json")))
	want = strings.ReplaceAll(want, " ", "%20")
	if r := findResult(t, doc, "etdi/rug_pull", ""); r.uri() != want || r.Locations[0].PhysicalLocation.ArtifactLocation.URIBaseID != "" {
		t.Errorf("outside the root: %s (base %q), want %s", r.uri(), r.Locations[0].PhysicalLocation.ArtifactLocation.URIBaseID, want)
	}
	if u := doc.Runs[0].OriginalURIBaseIDs[sarifSrcRoot].URI; u != "file://"+filepath.ToSlash(resolvedPath(elsewhere))+"/" {
		t.Errorf("%%SRCROOT%% %s for root %s", u, elsewhere)
	}

	// A configuration reached through a symbolic link is located at the
	// file itself: code scanning cannot show a result at a link.
	if err := os.Symlink(filepath.Join("ci dir", "mcp.json"), filepath.Join(s.dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	doc = s.sarif(exitRugPull, "--config", "link.json")
	if r := findResult(t, doc, "etdi/rug_pull", ""); r.uri() != "ci%20dir/mcp.json" {
		t.Errorf("through a link: %s", r.uri())
	}
}

// Partial fingerprints follow the finding, not the run: the same finding
// twice has the same fingerprint, also when its entry moves to another line
// or its message changes; different findings have different ones.
func TestSARIFFingerprints(t *testing.T) {
	s := newSarifEnv(t)
	alpha := echoEntry{name: "alpha", tool: "alpha_echo"}
	broken := echoEntry{name: "broken", tool: "x", command: "/nonexistent/etdi-sarif-one"}
	s.writeEntries(alpha, broken)
	cfg := []string{"--config", "ci dir/mcp.json"}
	s.sarif(exitError, append(cfg, "--yes")...)
	alpha.descFrom = "ECHO_TOOL"
	lines := s.writeEntries(alpha, broken)

	fps := func(doc sarifOut) map[string]string {
		m := map[string]string{}
		for _, r := range results(doc) {
			key := r.RuleID + " " + r.tool()
			if r.RuleID == "etdi/unsigned_tool" { // one a server
				key += r.Locations[0].LogicalLocations[0].Name
			}
			if _, dup := m[key]; dup {
				t.Fatalf("two %s results", key)
			}
			if r.PartialFingerprints[sarifLineHash] != r.PartialFingerprints[sarifFingerprint] ||
				!regexp.MustCompile(`^[0-9a-f]{32}:[1-9][0-9]*$`).MatchString(r.PartialFingerprints[sarifLineHash]) {
				t.Errorf("%s: fingerprints %v", key, r.PartialFingerprints)
			}
			m[key] = r.PartialFingerprints[sarifLineHash]
		}
		return m
	}
	first := s.sarif(exitRugPull, cfg...)
	one := fps(first)
	two := fps(s.sarif(exitRugPull, cfg...))
	if !maps.Equal(one, two) {
		t.Errorf("two runs, other fingerprints:\n%v\n%v", one, two)
	}
	seen := map[string]string{}
	for k, fp := range one {
		if other, dup := seen[fp]; dup {
			t.Errorf("%s and %s share fingerprint %s", k, other, fp)
		}
		seen[fp] = k
	}
	if len(one) < 3 {
		t.Fatalf("too few results to compare: %v", one)
	}

	// Another entry above alpha, and broken failing with another message:
	// the lines and the message change, the findings do not.
	broken.command = "/nonexistent/etdi-sarif-two"
	moved := s.writeEntries(echoEntry{name: "aaa", tool: "aaa_echo"}, alpha, broken)
	third := s.sarif(exitRugPull, cfg...)
	three := fps(third)
	for _, k := range []string{"etdi/rug_pull alpha_echo", "etdi/error "} {
		if three[k] != one[k] {
			t.Errorf("%s: fingerprint %s after the entry moved, was %s", k, three[k], one[k])
		}
	}
	if findResult(t, third, "etdi/rug_pull", "alpha_echo").line() != moved["alpha"] || moved["alpha"] == lines["alpha"] {
		t.Errorf("alpha did not move: line %d, was %d", moved["alpha"], lines["alpha"])
	}
	if a, b := findResult(t, first, "etdi/error", "").Message.Text, findResult(t, third, "etdi/error", "").Message.Text; a == b {
		t.Errorf("the error message did not change (%q): the test proves nothing", a)
	}
	if three["etdi/new_tool aaa_echo"] == "" || three["etdi/new_tool aaa_echo"] == three["etdi/rug_pull alpha_echo"] {
		t.Errorf("the new entry's finding: %v", three)
	}

	// Two findings no field tells apart are told apart by their order.
	doc := sarifLog(&checkOutput{Servers: []*checkReport{{Target: "t", Server: "unsigned:x", Findings: []finding.Finding{
		{Kind: finding.BundleInvalid, Severity: finding.Error, Message: "one"},
		{Kind: finding.BundleInvalid, Severity: finding.Error, Message: "two"}}}}}, sarifOptions{root: "/", policy: "trust.json"})
	a, b := doc.Runs[0].Results[0].PartialFingerprints[sarifLineHash], doc.Runs[0].Results[1].PartialFingerprints[sarifLineHash]
	if a == b || strings.TrimSuffix(a, ":1") != strings.TrimSuffix(b, ":2") {
		t.Errorf("twin findings: %s and %s", a, b)
	}
}

// Every rule is one code scanning shows as a security alert: a numeric
// security-severity ordered as the exit codes are, the security tag,
// descriptions and help, and a help URI at an anchor SPEC.md has; the
// error rule too.
func TestSARIFRules(t *testing.T) {
	spec, err := os.ReadFile("../../SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := sarifLog(&checkOutput{}, sarifOptions{root: "/", policy: "trust.json"})
	out, _ := json.Marshal(doc)
	sd := checkSARIF(t, string(out))
	sev := map[string]float64{}
	for _, r := range sd.Runs[0].Tool.Driver.Rules {
		f, err := strconv.ParseFloat(r.Properties.SecuritySeverity, 64)
		if err != nil || f <= 0 || f > 10 {
			t.Errorf("%s: security-severity %q", r.ID, r.Properties.SecuritySeverity)
		}
		sev[r.ID] = f
		if !slices.Contains(r.Properties.Tags, "security") {
			t.Errorf("%s: tags %v lack security", r.ID, r.Properties.Tags)
		}
		if r.ShortDescription.Text == "" || r.FullDescription.Text == "" || r.Help.Text == "" || r.Help.Markdown == "" {
			t.Errorf("%s: missing description or help", r.ID)
		}
		anchor, ok := strings.CutPrefix(r.HelpURI, "https://github.com/etdi-dev/etdi/blob/main/SPEC.md#")
		if !ok || !strings.Contains(string(spec), `<a id="`+anchor+`"></a>`) {
			t.Errorf("%s: helpUri %s is not an anchor of SPEC.md", r.ID, r.HelpURI)
		}
		kind := finding.Kind(strings.TrimPrefix(r.ID, "etdi/"))
		switch {
		case r.ID == sarifErrorRule:
			if r.DefaultConfiguration.Level != "error" || r.Properties.ExitCode != exitError || f < 4 {
				t.Errorf("the error rule: %+v", r)
			}
		case kind.ExitCode() != exitOK && kind.DefaultSeverity() == finding.Warning:
			// name_collision: a warning beside the new_tool finding that
			// sets its exit code.
			if r.DefaultConfiguration.Level != "warning" || f >= 4 || r.Properties.ExitCode != kind.ExitCode() {
				t.Errorf("%s: a warning kind at level %s, severity %v, exit property %d", r.ID, r.DefaultConfiguration.Level, f, r.Properties.ExitCode)
			}
		case kind.ExitCode() != exitOK:
			if r.DefaultConfiguration.Level != "error" || f < 4 || r.Properties.ExitCode != kind.ExitCode() {
				t.Errorf("%s: an error kind (exit %d) at level %s, severity %v, exit property %d", r.ID, kind.ExitCode(), r.DefaultConfiguration.Level, f, r.Properties.ExitCode)
			}
		default:
			if f >= 4 || r.Properties.ExitCode != 0 {
				t.Errorf("%s: a %s kind with severity %v", r.ID, kind.DefaultSeverity(), f)
			}
		}
	}
	if _, ok := sev[sarifErrorRule]; !ok {
		t.Error("the error rule is not declared")
	}
	for _, a := range finding.Kinds() {
		if _, ok := sev["etdi/"+string(a)]; !ok {
			t.Errorf("kind %s has no rule", a)
		}
		for _, b := range finding.Kinds() {
			ca, cb := a.ExitCode(), b.ExitCode()
			if ca != exitOK && cb != exitOK && ca != cb && finding.Worse(ca, cb) == ca && sev["etdi/"+string(a)] <= sev["etdi/"+string(b)] {
				t.Errorf("%s (exit %d) is worse than %s (exit %d) but not more severe: %v <= %v", a, ca, b, cb, sev["etdi/"+string(a)], sev["etdi/"+string(b)])
			}
		}
	}
}

// The schema test cannot pass everything: a result without a message, an
// unknown level or a region starting at line 0 is refused.
func TestSARIFSchemaRefusesInvalid(t *testing.T) {
	doc := sarifLog(&checkOutput{Servers: []*checkReport{{Target: "t", Error: "no"}}}, sarifOptions{root: "/", policy: "trust.json"})
	good, _ := json.Marshal(doc)
	sch := compiledSchema(t, sarifSchemaFile)
	if err := validJSON(sch, string(good)); err != nil {
		t.Fatalf("a valid log refused: %v", err)
	}
	for name, spoil := range map[string]func(*sarifDoc){
		"no message": func(d *sarifDoc) { d.Runs[0].Results[0].Message.Text = "" },
		"level":      func(d *sarifDoc) { d.Runs[0].Results[0].Level = "fatal" },
		"line 0":     func(d *sarifDoc) { d.Runs[0].Results[0].Locations[0].PhysicalLocation.Region.StartLine = 0 },
		"version":    func(d *sarifDoc) { d.Version = "2.0.0" },
	} {
		d := sarifLog(&checkOutput{Servers: []*checkReport{{Target: "t", Error: "no"}}}, sarifOptions{root: "/", policy: "trust.json"})
		spoil(d)
		b, _ := json.Marshal(d)
		if name == "no message" {
			b = []byte(strings.Replace(string(b), `"message":{"text":""}`, `"message":{}`, 1))
		}
		if validJSON(sch, string(b)) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// --exit-zero: the report is printed and the check exits 0 whatever it
// found, also when a server could not be checked; a usage error still
// exits 2 and an error before any report (no trust policy) still fails.
// --sarif-root goes with --sarif and names a directory.
func TestSARIFExitZeroAndRoot(t *testing.T) {
	s := newSarifEnv(t)
	s.ok(s.check("w.etdi.json", "live-ok.json", "--yes")...)
	r := s.run("check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "live-rugpull.json", "--sarif", "--exit-zero")
	if r.code != 0 || !strings.Contains(r.stderr, "exiting 0 instead of 11 (--exit-zero)") {
		t.Fatalf("--exit-zero with a rug pull: exit %d\n%s", r.code, r.stderr)
	}
	if doc := checkSARIF(t, r.stdout); len(results(doc)) == 0 {
		t.Fatal("--exit-zero printed no results")
	}
	r = s.run("check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "live-rugpull.json", "--json", "--exit-zero")
	var co checkOutput
	if err := json.Unmarshal([]byte(r.stdout), &co); err != nil || r.code != 0 || co.ExitCode != exitRugPull {
		t.Errorf("--json --exit-zero: exit %d, exitCode %d in the report (want the real 11): %v", r.code, co.ExitCode, err)
	}
	// Without --exit-zero the same check fails.
	s.run("check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "live-rugpull.json", "--sarif")
	if r := s.run("check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "live-rugpull.json", "--sarif"); r.code != exitRugPull {
		t.Errorf("without --exit-zero: exit %d", r.code)
	}
	s.writeEntries(echoEntry{name: "broken", tool: "x", command: "/nonexistent/etdi-sarif-missing"})
	if r := s.run("check", "--trust", "trust.json", "--pins", "pins.db", "--config", "ci dir/mcp.json", "--sarif", "--exit-zero"); r.code != 0 ||
		findResult(t, checkSARIF(t, r.stdout), "etdi/error", "").Level != "error" {
		t.Errorf("a server not checked, --exit-zero: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		code int
		want string
		args []string
	}{
		{exitUsage, "cannot be combined", []string{"--json", "--sarif", "--exit-zero"}},
		{exitUsage, "--sarif-root applies to --sarif", []string{"--sarif-root", ".", "--exit-zero"}},
		{exitUsage, "not a directory", []string{"--sarif", "--sarif-root", "nowhere", "--exit-zero"}},
		{exitUsage, "not a directory", []string{"--sarif", "--sarif-root", "trust.json"}},
		{exitError, "trust policy", []string{"--sarif", "--exit-zero", "--trust", "missing.json"}},
	} {
		args := append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "live-ok.json"}, c.args...)
		s.expect(c.code, c.want, args...)
	}
}

// writeTamperedBundle writes w.etdi.json with the first bytes of its
// signature replaced: a bundle whose signature does not verify.
func (s *sarifEnv) writeTamperedBundle(name string) {
	var b map[string]any
	raw, _ := os.ReadFile(filepath.Join(s.dir, "w.etdi.json"))
	json.Unmarshal(raw, &b)
	sig := b["dsseEnvelope"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
	sig["sig"] = "AAAA" + sig["sig"].(string)[4:]
	bad, _ := json.Marshal(b)
	s.write(name, string(bad))
}
