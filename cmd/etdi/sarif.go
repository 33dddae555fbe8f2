package main

import (
	"sort"
	"strings"

	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/verify"
)

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
	kinds := make([]string, 0)
	for _, k := range verify.Kinds() {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		kind := verify.Kind(k)
		r := sarifRule{ID: "etdi/" + k, Name: k, ShortDescription: sarifMessage{kind.About()}}
		r.DefaultConfiguration.Level = levelOf(verify.Finding{Kind: kind, Severity: kind.DefaultSeverity()}).SARIF
		if code := kind.ExitCode(); code != exitOK {
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
				Message: sarifMessage{f.Message}, Locations: locations(rep, pin.ItemRef(f.Item, f.Tool)), Properties: f})
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
