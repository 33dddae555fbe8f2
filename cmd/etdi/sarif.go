package main

import (
	"sort"
	"strings"

	"github.com/etdi-dev/etdi/verify"
)

// ruleText describes each finding kind for SARIF rules and is the one list
// of kinds the SARIF output knows; a test checks it covers kindExit.
var ruleText = map[verify.Kind]string{
	verify.BundleInvalid:       "The bundle or its signed statement is malformed or contradicts itself.",
	verify.SignatureMissing:    "The bundle carries no signature.",
	verify.SignatureInvalid:    "No signature verifies with a key the trust policy holds for the claimed provider.",
	verify.UnsignedTool:        "A tool is not signed by any bundle.",
	verify.Impersonation:       "A key trusted only for another provider signed the bundle, or a tool is listed twice.",
	verify.DefinitionChanged:   "A live tool definition differs from the signed one.",
	verify.Expired:             "The bundle is expired or not yet valid.",
	verify.KeyNotValid:         "The signing key is outside its validity window.",
	verify.NotServed:           "A signed tool is not offered by the server.",
	verify.NewTool:             "A tool was never approved: approval required.",
	verify.NewVersion:          "A tool has a new version: approval required.",
	verify.NewSigner:           "A tool approved unsigned is now signed: approval required.",
	verify.RugPull:             "A tool's definition or permissions changed since approval without a new version.",
	verify.Downgrade:           "A tool version or bundle is older than the approved one.",
	verify.SignerChanged:       "A tool is signed by someone other than the approved signer.",
	verify.Shadowing:           "A tool name approved on another server appears on this one.",
	verify.ConfusableName:      "A tool name looks like an approved one.",
	verify.Revoked:             "A tool, version or signing key was revoked.",
	verify.Removed:             "An approved tool is no longer offered.",
	verify.MixedScript:         "A new tool name mixes scripts or holds invisible characters.",
	verify.InstructionsChanged: "The server's instructions changed since approval.",
	verify.SecretInDefinition:  "The server shows the model a secret it is configured with (env or header value, URL credentials, credential argument); the definition is not approved or recorded.",
	verify.SuspiciousText:      "A definition hides characters or carries text aimed at the model (instruction tags, overrides, secret paths, other servers' tool names).",
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	Name                 string       `json:"name"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
	} `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
	Kind               string `json:"kind"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations,omitempty"`
	Properties verify.Finding  `json:"properties"`
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
	Results []sarifResult `json:"results"`
}

type sarifDoc struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

// sarifLog turns a check into SARIF 2.1.0: one rule per finding kind and
// one result per finding, located at the configuration, bundle or tools
// file and, logically, at the server and tool.
func sarifLog(out *checkOutput) *sarifDoc {
	run := sarifRun{Results: []sarifResult{}}
	run.Tool.Driver.Name = "etdi"
	run.Tool.Driver.Version = readBuildInfo().Version
	run.Tool.Driver.InformationURI = "https://etdi.dev"
	kinds := make([]string, 0, len(ruleText))
	for k := range ruleText {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		r := sarifRule{ID: "etdi/" + k, Name: k, ShortDescription: sarifMessage{ruleText[verify.Kind(k)]}}
		r.DefaultConfiguration.Level = levelOf(verify.Finding{Kind: verify.Kind(k), Severity: defaultSeverity(verify.Kind(k))}).SARIF
		if code, ok := kindExit[verify.Kind(k)]; ok {
			r.Properties = map[string]any{"exitCode": code}
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, r)
	}
	for _, rep := range out.Servers {
		if rep.Error != "" {
			run.Results = append(run.Results, sarifResult{RuleID: "etdi/error", Level: "error",
				Message: sarifMessage{rep.Target + ": " + rep.Error}, Locations: locations(rep, "")})
			continue
		}
		for _, f := range rep.Findings {
			if f.Severity == verify.Info {
				continue
			}
			run.Results = append(run.Results, sarifResult{RuleID: "etdi/" + string(f.Kind), Level: levelOf(f).SARIF,
				Message: sarifMessage{f.Message}, Locations: locations(rep, f.Tool), Properties: f})
		}
	}
	return &sarifDoc{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
}

func locations(rep *checkReport, tool string) []sarifLocation {
	var l sarifLocation
	if rep.location != "" && !strings.Contains(rep.location, "://") {
		l.PhysicalLocation = &struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
		}{}
		l.PhysicalLocation.ArtifactLocation.URI = rep.location
	}
	server := rep.Server
	if server == "" {
		server = rep.Target
	}
	l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: server, Kind: "module"})
	if tool != "" {
		l.LogicalLocations = append(l.LogicalLocations, sarifLogical{Name: tool, FullyQualifiedName: server + "/" + tool, Kind: "function"})
	}
	return []sarifLocation{l}
}
