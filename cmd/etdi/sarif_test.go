package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// checkSARIF validates a SARIF log against the official schema and what
// GitHub code scanning requires of it (sarifProblems), and returns it.
func checkSARIF(t *testing.T, out string) sarifOut {
	t.Helper()
	for _, p := range sarifProblems(out) {
		t.Errorf("%s\n%.2000s", p, out)
	}
	var doc sarifOut
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("not one SARIF run: %v\n%.2000s", err, out)
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

// Two findings no field tells apart are told apart by their order in
// their fingerprints. (The fingerprints of findings across runs:
// sarif_fingerprints.)
func TestSARIFFingerprintsOfTwinFindings(t *testing.T) {
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

// writeTamperedBundle writes w.etdi.json with the first bytes of its
// signature replaced: a bundle whose signature does not verify.
func (s *sarifEnv) writeTamperedBundle(name string) {
	raw, _ := os.ReadFile(filepath.Join(s.dir, "w.etdi.json"))
	s.write(name, string(tamperedBundle(raw)))
}

// tamperedBundle returns the bundle raw with the first bytes of its
// signature replaced.
func tamperedBundle(raw []byte) []byte {
	var b map[string]any
	json.Unmarshal(raw, &b)
	sig := b["dsseEnvelope"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
	sig["sig"] = "AAAA" + sig["sig"].(string)[4:]
	bad, _ := json.Marshal(b)
	return bad
}
