package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// The SARIF profile of etdi check (docs/output.md#sarif-and-json-output): what GitHub code scanning
// needs to show an alert (a physical location, a rule with help) and to
// track it across runs (partial fingerprints).
const (
	sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"
	// sarifSrcRoot is the uriBaseId of every location under --sarif-root.
	sarifSrcRoot = "%SRCROOT%"
	// sarifErrorRule is the rule of a server that could not be checked.
	sarifErrorRule = "etdi/error"
	// sarifErrorAnchor is the SPEC.md anchor that documents it.
	sarifErrorAnchor = "not-checked"
	// sarifFingerprint is etdi's own partial fingerprint; the same value is
	// given as primaryLocationLineHash, the one key code scanning reads.
	sarifFingerprint = "etdiFinding/v1"
	sarifLineHash    = "primaryLocationLineHash"
	specBlobURL      = "https://github.com/etdi-dev/etdi/blob/%s/SPEC.md#%s"
)

type sarifMessage struct {
	Text string `json:"text"`
}

// sarifText makes text that a server or a repository controls safe as a
// SARIF plain text message (docs/output.md#sarif-and-json-output), which code scanning renders:
// characters that hide or reorder text (controls, bidirectional controls,
// invisible and unassigned code points) and every backslash are written
// as termtext escapes; "[", "]", "(", ")", "`", "<" and ">" get a
// backslash, so that no embedded link, image, code span, autolink or HTML
// can be formed (SARIF §3.11.6; GitHub Flavored Markdown reads a
// backslash before punctuation as the literal character); "{" and "}"
// are doubled, as SARIF §3.11.5 requires of literal braces (a "{0}" is
// otherwise a placeholder).
func sarifText(s string) string {
	s = termtext.Escape(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		switch r {
		case '[', ']', '(', ')', '`', '<', '>':
			b.WriteByte('\\')
		case '{', '}':
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sarifPlain is etdi's own text as a SARIF message: its braces doubled
// (SARIF §3.11.5).
func sarifPlain(s string) string {
	return strings.NewReplacer("{", "{{", "}", "}}").Replace(s)
}

type sarifMultiformat struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRuleProperties struct {
	Tags []string `json:"tags"`
	// SecuritySeverity is a score from 0.1 to 10.0, as a string.
	SecuritySeverity string `json:"security-severity"`
	// ExitCode is the exit code an error finding of the rule sets.
	ExitCode int `json:"exitCode,omitempty"`
}

type sarifRule struct {
	ID                   string           `json:"id"`
	Name                 string           `json:"name"`
	ShortDescription     sarifMessage     `json:"shortDescription"`
	FullDescription      sarifMessage     `json:"fullDescription"`
	Help                 sarifMultiformat `json:"help"`
	HelpURI              string           `json:"helpUri"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties sarifRuleProperties `json:"properties"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical  `json:"physicalLocation"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
	Kind               string `json:"kind"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	// Properties is the finding with its evidence; nil for a server that
	// could not be checked.
	Properties *finding.Finding `json:"properties,omitempty"`
}

type sarifRun struct {
	Tool struct {
		Driver struct {
			Name           string      `json:"name"`
			Version        string      `json:"version"`
			InformationURI string      `json:"informationUri"`
			Rules          []sarifRule `json:"rules"`
		} `json:"driver"`
	} `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds"`
	Results            []sarifResult            `json:"results"`
}

type sarifDoc struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

// sarifOptions say where results are located.
type sarifOptions struct {
	// root is the repository root (--sarif-root): absolute, symbolic links
	// resolved. Locations under it are relative to %SRCROOT%.
	root string
	// policy is the trust policy file: the location of a server that has
	// no file of its own (--server or --url without --bundle).
	policy string
}

// newSarifOptions resolves --sarif-root (default: the working directory).
func newSarifOptions(root, policy string) (sarifOptions, error) {
	if root == "" {
		root = "."
	}
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return sarifOptions{}, usagef("--sarif-root %s: not a directory", root)
	}
	return sarifOptions{root: resolvedPath(root), policy: policy}, nil
}

// sarifLog turns a check into SARIF 2.1.0: one rule per finding kind and
// the error rule, one result per error or warning finding and per server
// that could not be checked, each located at a file and fingerprinted.
// The unsigned_tool warnings of a server are one result (unsignedFinding),
// so a server approved and unchanged has none, or only that one when the
// policy lets its tools run unsigned.
func sarifLog(out *checkOutput, o sarifOptions) *sarifDoc {
	run := sarifRun{Results: []sarifResult{}}
	run.Tool.Driver.Name = "etdi"
	run.Tool.Driver.Version = readBuildInfo().Version
	run.Tool.Driver.InformationURI = "https://etdi.dev"
	run.Tool.Driver.Rules = sarifRules()
	run.OriginalURIBaseIDs = map[string]sarifArtifact{sarifSrcRoot: {URI: dirURI(o.root)}}
	seen := map[string]int{}
	add := func(r sarifResult, identity ...string) {
		fp := fingerprint(identity...)
		seen[fp]++
		// The same identity twice in one run (two findings no field
		// tells apart) is told apart by its order, as code scanning's
		// own line hashes are.
		v := fp + ":" + strconv.Itoa(seen[fp])
		r.PartialFingerprints = map[string]string{sarifFingerprint: v, sarifLineHash: v}
		run.Results = append(run.Results, r)
	}
	for _, rep := range out.Servers {
		if rep.Error != "" {
			add(sarifResult{RuleID: sarifErrorRule, Level: "error",
				Message: sarifMessage{sarifText(rep.Target + ": " + rep.Error)}, Locations: o.locations(rep, "")},
				sarifErrorRule, reportIdentity(rep))
			continue
		}
		if f := unsignedFinding(rep); f != nil {
			rule := "etdi/" + string(f.Kind)
			add(sarifResult{RuleID: rule, Level: levelOf(*f).SARIF, Message: sarifMessage{sarifText(f.Message)},
				Locations: o.locations(rep, ""), Properties: f},
				rule, reportIdentity(rep))
		}
		for i := range rep.Findings {
			f := &rep.Findings[i]
			if f.Severity == finding.Info || unsignedState(*f) {
				continue
			}
			rule := "etdi/" + string(f.Kind)
			add(sarifResult{RuleID: rule, Level: levelOf(*f).SARIF, Message: sarifMessage{sarifText(f.Message)},
				Locations: o.locations(rep, pin.ItemRef(f.Item, f.Tool)), Properties: f},
				rule, reportIdentity(rep), f.Item, f.Tool, f.KeyID, f.LooksLike, f.Pointer, f.Match)
		}
	}
	return &sarifDoc{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}
}

// unsignedFinding is the one unsigned_tool warning of a server whose
// policy lets its unsigned tools run (warn), standing for the warning of
// each tool: the server's state, one alert however many tools it has;
// nil when it has none.
func unsignedFinding(rep *checkReport) *finding.Finding {
	line := unsignedLine(rep)
	if line == "" {
		return nil
	}
	return &finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Warning, Server: rep.Server,
		Message: fmt.Sprintf("%s: %s", rep.Server, line)}
}

// reportIdentity names the server of a report across runs: its identity
// (provider:server or unsigned:name) once etdi established it, else the
// name it was checked under (the configuration entry, --name, or the
// command), else its label.
func reportIdentity(rep *checkReport) string {
	switch {
	case rep.Server != "":
		return rep.Server
	case rep.name != "":
		return "name:" + rep.name
	}
	return "target:" + rep.Target
}

// fingerprint hashes the parts that make a finding the same finding from
// run to run: never its message, line or digests, which change while the
// finding stays.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (o sarifOptions) locations(rep *checkReport, tool string) []sarifLocation {
	file, line := rep.location, rep.line
	if file == "" || file == "-" || strings.Contains(file, "://") {
		// A live server, or one read from standard input: the trust
		// policy the server was checked against stands for it.
		file, line = o.policy, 0
	}
	l := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: o.artifact(file), Region: sarifRegion{StartLine: max(line, 1)}}}
	server := rep.Server
	if server == "" {
		server = rep.Target
	}
	// Names shown as they are, but for what hides or reorders text.
	server, tool = termtext.Escape(server), termtext.Escape(tool)
	l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: server, Kind: "module"})
	if tool != "" {
		l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: tool, FullyQualifiedName: server + "/" + tool, Kind: "function"})
	}
	return []sarifLocation{l}
}

// artifact is file relative to %SRCROOT% when it lies under the root, else
// an absolute file: URI.
func (o sarifOptions) artifact(file string) sarifArtifact {
	p := resolvedPath(file)
	if rel, err := filepath.Rel(o.root, p); err == nil && rel != ".." &&
		!strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
		return sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(rel)}).String(), URIBaseID: sarifSrcRoot}
	}
	return sarifArtifact{URI: fileURI(p)}
}

// resolvedPath is p absolute with symbolic links resolved (code scanning
// cannot show a result located at a link), as far as it exists.
func resolvedPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// dirURI is the file: URI of a directory, ending in "/" as SARIF asks of a
// base URI.
func dirURI(abs string) string {
	u := fileURI(abs)
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// sarifRules declares one rule per finding kind, sorted, then the error
// rule.
func sarifRules() []sarifRule {
	kinds := make([]string, 0)
	for _, k := range finding.Kinds() {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	var rules []sarifRule
	for _, k := range kinds {
		kind := finding.Kind(k)
		code := kind.ExitCode()
		full := kind.About() + " " + exitSentence(kind)
		r := sarifRule{ID: "etdi/" + k, Name: k, ShortDescription: sarifMessage{sarifPlain(kind.About())}, FullDescription: sarifMessage{sarifPlain(full)},
			HelpURI: specAnchorURL("finding-" + k)}
		r.Help = ruleHelp(full, remedy(kind), r.HelpURI)
		r.DefaultConfiguration.Level = levelOf(finding.Finding{Kind: kind, Severity: kind.DefaultSeverity()}).SARIF
		r.Properties = sarifRuleProperties{Tags: []string{"security", "mcp"}, SecuritySeverity: securitySeverity(kind)}
		if code != exitOK {
			r.Properties.ExitCode = code
		}
		rules = append(rules, r)
	}
	const about = "A server could not be checked: it did not start or answer, its configuration entry cannot be used as written, or a file it needs is missing or unreadable."
	full := about + " etdi fails closed: the check exits 1 unless another server has a security finding."
	r := sarifRule{ID: sarifErrorRule, Name: "error", ShortDescription: sarifMessage{sarifPlain(about)}, FullDescription: sarifMessage{sarifPlain(full)},
		HelpURI: specAnchorURL(sarifErrorAnchor)}
	r.Help = ruleHelp(full, "The result's message says what failed; fix the server or its entry and check again. Until then nothing is known about its tools.", r.HelpURI)
	r.DefaultConfiguration.Level = "error"
	r.Properties = sarifRuleProperties{Tags: []string{"security", "mcp"}, SecuritySeverity: errorSecuritySeverity, ExitCode: exitError}
	return append(rules, r)
}

// Security severities (GitHub: 9.0 and above critical, 7.0 high, 4.0
// medium, below low), ordered as the exit codes are (12 > 11 > 10 > 14 >
// 13): every error kind is medium or above, warnings are low.
var exitSecuritySeverity = map[int]string{
	exitImpersonation: "9.5",
	exitRugPull:       "9.0",
	exitSignature:     "8.0",
	exitRevoked:       "7.0",
	exitApproval:      "5.0",
}

const (
	warningSecuritySeverity = "3.0"
	infoSecuritySeverity    = "1.0"
	// errorSecuritySeverity: a server not checked may be anything.
	errorSecuritySeverity = "6.0"
)

func securitySeverity(k finding.Kind) string {
	if s, ok := exitSecuritySeverity[k.ExitCode()]; ok && k.DefaultSeverity() == finding.Error {
		return s
	}
	if k.DefaultSeverity() == finding.Warning {
		return warningSecuritySeverity
	}
	return infoSecuritySeverity
}

var exitMeaning = map[int]string{
	exitSignature:     "missing or invalid signature",
	exitRugPull:       "rug pull or downgrade",
	exitImpersonation: "impersonation",
	exitApproval:      "approval required",
	exitRevoked:       "revoked or expired",
}

func exitSentence(k finding.Kind) string {
	if code := k.ExitCode(); code != exitOK && k.DefaultSeverity() == finding.Warning {
		return fmt.Sprintf("A warning: the tool's new_tool finding beside it fails etdi check with exit %d (%s) until the tool is approved.", code, exitMeaning[code])
	}
	if code := k.ExitCode(); code != exitOK {
		return fmt.Sprintf("As an error it fails etdi check with exit %d (%s).", code, exitMeaning[code])
	}
	if k.DefaultSeverity() == finding.Warning {
		return "A warning: it never changes the exit code."
	}
	return "Information: never a result."
}

// remedy says what to do about a finding of kind k.
func remedy(k finding.Kind) string {
	switch k.Approvability() {
	case finding.Approvable:
		return "Review what the server now offers (etdi diff shows it); if you trust it, approve it: etdi check --approve, or etdi pin approve with the same inputs (changed instructions: --accept-instructions)."
	case finding.ApprovableByName:
		return "Treat it as an attack until you know why it changed: etdi diff shows the difference. To accept it anyway, approve that tool by name: etdi pin approve --tool NAME."
	}
	switch k.ExitCode() {
	case exitSignature:
		return "Only a bundle signed with a key the trust policy holds for the provider verifies: get a correctly signed bundle from the provider, add its key with etdi trust add if you trust it, or (unsigned tools) set the policy's unsigned rule with etdi trust unsigned."
	case exitRugPull, exitImpersonation:
		return "The server does not serve what its provider signed or what you approved, and this cannot be approved away: do not use the server until its provider explains and fixes it."
	case exitRevoked:
		return "Get a current bundle from the provider; a revoked tool, version or key stays blocked until the provider publishes a replacement."
	}
	return "Review the finding's evidence in the result's properties."
}

func ruleHelp(full, remedy, uri string) sarifMultiformat {
	return sarifMultiformat{
		Text:     sarifPlain(full + "\n\n" + remedy + "\n\nSee " + uri),
		Markdown: sarifPlain(full + "\n\n" + remedy + "\n\nSee [SPEC.md](" + uri + ")."),
	}
}

// specAnchorURL is the SPEC.md anchor of the etdi release that runs (a
// release tag), else of main.
func specAnchorURL(anchor string) string {
	return fmt.Sprintf(specBlobURL, specRef(readBuildInfo().Version), anchor)
}

func specRef(version string) string {
	if semver.IsValid(version) && !module.IsPseudoVersion(version) && semver.Build(version) == "" {
		return version
	}
	return "main"
}
